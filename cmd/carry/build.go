package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/carry/kcpbuild"
)

// ExitUnfetchable is carry build's exit status when kcp's module graph cannot
// be fetched on this machine, so that `make` can tell "not possible here" from
// a broken build.
const ExitUnfetchable = 3

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

// cmdFlags collects repeated --cmd flags.
type cmdFlags []string

func (c *cmdFlags) String() string     { return strings.Join(*c, ",") }
func (c *cmdFlags) Set(v string) error { *c = append(*c, v); return nil }

func runBuild(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("build", "build [--kcp-source DIR [--kcp-version V]] [--pristine] [--cmd cmd/kcp ...] [--replace MODULE=DIR ...] [--out DIR] [--json] [--root DIR]", stderr)
	source := fs.String("kcp-source", "", "build this kcp git checkout (source mode) instead of the kcp release go.mod requires (module mode)")
	out := fs.String("out", "", "directory for the binaries (default ROOT/bin)")
	pristine := fs.Bool("pristine", false, "build the same kcp without the carry (the fork at its pin), as <command>-pristine: the positive control")
	kcpVersion := fs.String("kcp-version", "", "kcp version to stamp into a source-mode build of a tree without git metadata (default: ROOT/go.mod's kcp release when the tree is exactly its module source, else the commit a kcp-<commit> archive directory names)")
	replaces := replaceFlags{}
	fs.Var(replaces, "replace", "use a local copy of a module the build cannot fetch, as MODULE=DIR (repeatable)")
	var cmds cmdFlags
	fs.Var(&cmds, "cmd", "kcp main package to build, relative to kcp's root (repeatable; default "+strings.Join(kcpbuild.DefaultCommands, ", ")+")")
	if code, done := fs.parse(args); done {
		return code
	}
	root, err := fs.repoRoot()
	if err != nil {
		return fail(stderr, "build", err)
	}
	res, err := kcpbuild.Build(ctx, kcpbuild.Options{
		Root:       root,
		KCPSource:  *source,
		Commands:   cmds,
		Replaces:   replaces,
		OutDir:     *out,
		Progress:   stderr,
		Pristine:   *pristine,
		KCPVersion: *kcpVersion,
	})
	if err != nil {
		return failBuild(stderr, "build", err)
	}
	if fs.json {
		if err := writeJSON(stdout, res); err != nil {
			return fail(stderr, "build", err)
		}
		return ExitOK
	}
	fmt.Fprintf(stdout, "built kcp %s (%s mode) as %s:\n", res.KCPVersion, res.Mode, res.GitVersion)
	for _, b := range res.Binaries {
		fmt.Fprintf(stdout, "  %s\n", b)
	}
	return ExitOK
}
