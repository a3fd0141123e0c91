package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/pins"
)

// PinsOptions are carry pins' flags.
type PinsOptions struct {
	commonOptions
	write  bool
	source string
}

func NewPinsOptions() *PinsOptions { return &PinsOptions{} }

func (o *PinsOptions) AddFlags(fs *pflag.FlagSet) {
	o.commonOptions.AddFlags(fs)
	fs.BoolVar(&o.write, "write", false, "rewrite go.mod's pin block instead of checking it")
	fs.StringVar(&o.source, "kcp-source", "", "instead, tell whether this kcp tree pins each carried fork module at the commit the carry was made for (go.mod's)")
}

// Validate refuses --write with --kcp-source: a usage error, as every
// command's.
func (o *PinsOptions) Validate() error {
	if o.write && o.source != "" {
		return errors.New("--write and --kcp-source exclude each other: --kcp-source only reads the tree")
	}
	return nil
}

func (o *PinsOptions) Run(ctx context.Context, stdout, stderr io.Writer) int {
	root, err := o.repoRoot()
	if err != nil {
		return fail(stderr, "pins", err)
	}
	if o.source != "" {
		return runTreePins(root, o.source, o.json, stdout, stderr)
	}
	res, err := pins.CheckGoMod(ctx, root, o.write)
	if err != nil {
		return fail(stderr, "pins", err)
	}

	if o.json {
		if err := writeJSON(stdout, res); err != nil {
			return fail(stderr, "pins", err)
		}
	} else {
		for _, l := range res.Diff.Lines() {
			fmt.Fprintln(stdout, l)
		}
	}
	switch {
	case res.Match:
		fmt.Fprintf(stderr, "%s: kcp pins match %s\n", res.GoMod, res.KCP)
		return ExitOK
	case res.Written:
		fmt.Fprintf(stderr, "%s: rewrote kcp pins from %s\n", res.GoMod, res.KCP)
		return ExitOK
	default:
		fmt.Fprintf(stderr, "%s: kcp pins differ from %s (- in go.mod, + derived); run `carry pins --write`\n", res.GoMod, res.KCP)
		return ExitFail
	}
}

// runTreePins reports whether a kcp tree pins the fork where the carry was
// made; any other pin is refused (ExitFail).
func runTreePins(root, tree string, asJSON bool, stdout, stderr io.Writer) int {
	carry, err := carryset.Load(root)
	if err != nil {
		return fail(stderr, "pins", err)
	}
	c, err := pins.CheckTree(tree, carry.Forks())
	if err != nil {
		return fail(stderr, "pins", err)
	}
	if asJSON {
		if err := writeJSON(stdout, c); err != nil {
			return fail(stderr, "pins", err)
		}
	}
	out := stdout
	if asJSON || !c.Match {
		out = stderr
	}
	for _, l := range c.Lines() {
		fmt.Fprintln(out, l)
	}
	if !c.Match {
		return ExitFail
	}
	return ExitOK
}
