package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

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

func runImage(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("image", "image (--push REF | --out DIR) [--base REF | --base oci:DIR] [--platform linux/amd64,linux/arm64] [--kcp-source DIR] [--replace MODULE=DIR ...] [--bin-dir DIR] [--json] [--root DIR]", stderr)
	base := fs.String("base", "", "kcp image to layer onto: a registry reference, or oci:DIR for an OCI image layout (default "+image.DefaultBaseRepository+":<kcp version built>)")
	push := fs.String("push", "", "push the result to this registry reference (credentials from the default keychain, as docker login / crane auth login store them)")
	out := fs.String("out", "", "write the result as an OCI image layout into this directory (replaced if it already holds one)")
	binDir := fs.String("bin-dir", "", "directory for each platform's binaries, in DIR/<os>_<arch> (default ROOT/bin)")
	source := fs.String("kcp-source", "", "build this kcp git checkout (as carry build --kcp-source)")
	replaces := replaceFlags{}
	fs.Var(replaces, "replace", "use a local copy of a module the build cannot fetch, as MODULE=DIR (repeatable)")
	var platforms platformFlags
	fs.Var(&platforms, "platform", "only these platforms of the base, as OS/ARCH[,OS/ARCH] (repeatable; default every linux platform of the base)")
	if code, done := fs.parse(args); done {
		return code
	}
	if *push == "" && *out == "" {
		fmt.Fprintln(stderr, "carry image: give --push REF or --out DIR (or both)")
		fs.Usage()
		return ExitUsage
	}
	root, err := fs.repoRoot()
	if err != nil {
		return fail(stderr, "image", err)
	}
	res, err := image.Run(ctx, image.Options{
		Root:      root,
		KCPSource: *source,
		Replaces:  replaces,
		Base:      *base,
		Platforms: platforms,
		Push:      *push,
		OutDir:    *out,
		BinDir:    *binDir,
		Progress:  stderr,
	})
	if err != nil {
		return failBuild(stderr, "image", err)
	}
	if fs.json {
		if err := writeJSON(stdout, res); err != nil {
			return fail(stderr, "image", err)
		}
		return ExitOK
	}
	fmt.Fprintln(stdout, res.Digest)
	fmt.Fprintf(stdout, "  %s, %s\n", res.MediaType, res.Version)
	fmt.Fprintf(stdout, "  base %s@%s\n", res.BaseName, res.BaseDigest)
	for _, p := range res.Platforms {
		var names []string
		for _, b := range p.Binaries {
			names = append(names, "/"+b.Name)
		}
		fmt.Fprintf(stdout, "  %-12s %s  layer %s: %s\n", p.Platform, p.Digest, p.LayerDigest, strings.Join(names, " "))
	}
	if res.Pushed != "" {
		fmt.Fprintf(stdout, "pushed %s (%s)\n", *push, res.Pushed)
	}
	if res.Out != "" {
		fmt.Fprintf(stdout, "wrote %s (OCI image layout, ref %s)\n", res.Out, res.RefName)
	}
	return ExitOK
}
