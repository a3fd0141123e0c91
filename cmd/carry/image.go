package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/image"
)

// platformFlags collects --platform OS/ARCH[,OS/ARCH...] (repeatable).
type platformFlags []v1.Platform

func (p *platformFlags) String() string {
	var s []string
	for _, pl := range *p {
		s = append(s, pl.String())
	}
	return strings.Join(s, ",")
}

func (p *platformFlags) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		pl, err := v1.ParsePlatform(part)
		if err != nil {
			return err
		}
		if pl.OS == "" || pl.Architecture == "" {
			return fmt.Errorf("want OS/ARCH such as linux/arm64, got %q", part)
		}
		*p = append(*p, *pl)
	}
	return nil
}

func (p *platformFlags) Type() string { return "OS/ARCH" }

// ImageOptions are carry image's flags.
type ImageOptions struct {
	commonOptions
	base, push, out, binDir, source string
	replaces                        replaceFlags
	platforms                       platformFlags
}

func NewImageOptions() *ImageOptions { return &ImageOptions{replaces: replaceFlags{}} }

func (o *ImageOptions) AddFlags(fs *pflag.FlagSet) {
	o.commonOptions.AddFlags(fs)
	fs.StringVar(&o.base, "base", "", "kcp image to layer onto: a registry reference, or oci:DIR for an OCI image layout (default "+image.DefaultBaseRepository+":<kcp version built>)")
	fs.StringVar(&o.push, "push", "", "push the result to this registry reference (credentials from the default keychain, as docker login / crane auth login store them)")
	fs.StringVar(&o.out, "out", "", "write the result as an OCI image layout into this directory (replaced if it already holds one)")
	fs.StringVar(&o.binDir, "bin-dir", "", "directory for each platform's binaries, in DIR/<os>_<arch> (default ROOT/bin)")
	fs.StringVar(&o.source, "kcp-source", "", "build this kcp git checkout (as carry build --kcp-source)")
	fs.Var(o.replaces, "replace", "use a local copy of a module the build cannot fetch, as MODULE=DIR (repeatable)")
	fs.Var(&o.platforms, "platform", "only these platforms of the base, as OS/ARCH[,OS/ARCH] (repeatable; default every linux platform of the base)")
}

func (o *ImageOptions) Validate() error {
	if o.push == "" && o.out == "" {
		return errors.New("give --push REF or --out DIR (or both)")
	}
	return nil
}

func (o *ImageOptions) Run(ctx context.Context, stdout, stderr io.Writer) int {
	return runCarry(&o.commonOptions, "image", stdout, stderr, func(c *carryset.Carry) (*image.Result, error) {
		return image.Run(ctx, image.Options{
			Carry:     c,
			KCPSource: o.source,
			Replaces:  o.replaces,
			Base:      o.base,
			Platforms: o.platforms,
			Push:      o.push,
			OutDir:    o.out,
			BinDir:    o.binDir,
			Progress:  stderr,
		})
	}, o.writeText)
}

func (o *ImageOptions) writeText(w io.Writer, res *image.Result) {
	fmt.Fprintln(w, res.Digest)
	fmt.Fprintf(w, "  %s, %s\n", res.MediaType, res.Version)
	fmt.Fprintf(w, "  base %s@%s\n", res.BaseName, res.BaseDigest)
	for _, p := range res.Platforms {
		var names []string
		for _, b := range p.Binaries {
			names = append(names, "/"+b.Name)
		}
		fmt.Fprintf(w, "  %-12s %s  layer %s: %s\n", p.Platform, p.Digest, p.LayerDigest, strings.Join(names, " "))
	}
	if res.Pushed != "" {
		fmt.Fprintf(w, "pushed %s (%s)\n", o.push, res.Pushed)
	}
	if res.Out != "" {
		fmt.Fprintf(w, "wrote %s (OCI image layout, ref %s)\n", res.Out, res.RefName)
	}
}
