package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcpbuild"
)

// replaceFlags collects repeated --replace module=dir flags.
type replaceFlags map[string]string

func (r replaceFlags) String() string {
	var parts []string
	for mod, dir := range r {
		parts = append(parts, mod+"="+dir)
	}
	return strings.Join(parts, ",")
}

func (r replaceFlags) Set(v string) error {
	mod, dir, ok := strings.Cut(v, "=")
	if !ok || mod == "" || dir == "" {
		return fmt.Errorf("want MODULE=DIR, got %q", v)
	}
	r[mod] = dir
	return nil
}

func (r replaceFlags) Type() string { return "MODULE=DIR" }

// BuildOptions are carry build's flags.
type BuildOptions struct {
	commonOptions
	source, out, kcpVersion string
	pristine, race          bool
	replaces                replaceFlags
	cmds, without           []string
}

func NewBuildOptions() *BuildOptions { return &BuildOptions{replaces: replaceFlags{}} }

func (o *BuildOptions) AddFlags(fs *pflag.FlagSet) {
	o.commonOptions.AddFlags(fs)
	fs.StringVar(&o.source, "kcp-source", "", "build this kcp git checkout (source mode) instead of the kcp release go.mod requires (module mode)")
	fs.StringVar(&o.out, "out", "", "directory for the binaries (default ROOT/bin)")
	fs.BoolVar(&o.pristine, "pristine", false, "build the same kcp without the carry (the fork at its pin), as <command>-pristine: the positive control")
	fs.BoolVar(&o.race, "race", false, "build with the race detector (-race, cgo on; needs the C compiler `go env CC` names), stamped -race in /version's gitVersion, into ROOT/bin/race unless --out")
	fs.StringVar(&o.kcpVersion, "kcp-version", "", "kcp version to stamp into a source-mode build of a tree without git metadata (default: ROOT/go.mod's kcp release when the tree is exactly its module source, else the commit a kcp-<commit> archive directory names)")
	fs.Var(o.replaces, "replace", "use a local copy of a module the build cannot fetch, as MODULE=DIR (repeatable)")
	fs.StringArrayVar(&o.without, "without", nil, "leave a patch of staging-patches/ out, by file name or number in its series (0002 or 2; MODULE/0002 where numbers repeat); repeatable. The binaries are <command>-without-<numbers>, linked from an overlay under .build/")
	fs.StringArrayVar(&o.cmds, "cmd", nil, "kcp main package to build, relative to kcp's root (repeatable; default "+strings.Join(kcpbuild.DefaultCommands, ", ")+")")
}

func (o *BuildOptions) Run(ctx context.Context, stdout, stderr io.Writer) int {
	return runCarry(&o.commonOptions, "build", stdout, stderr, func(c *carryset.Carry) (*kcpbuild.Result, error) {
		return kcpbuild.Build(ctx, kcpbuild.Options{
			Carry:      c,
			KCPSource:  o.source,
			Commands:   o.cmds,
			Replaces:   o.replaces,
			OutDir:     o.out,
			Progress:   stderr,
			Pristine:   o.pristine,
			KCPVersion: o.kcpVersion,
			Race:       o.race,
			Without:    o.without,
		})
	}, func(w io.Writer, res *kcpbuild.Result) {
		fmt.Fprintf(w, "built kcp %s (%s mode) as %s:\n", res.KCPVersion, res.Mode, res.GitVersion)
		if len(res.Without) > 0 {
			fmt.Fprintf(w, "  without %s\n", strings.Join(res.Without, ", "))
		}
		for _, b := range res.Binaries {
			fmt.Fprintf(w, "  %s\n", b)
		}
	})
}
