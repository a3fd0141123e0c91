package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	"golang.org/x/mod/modfile"

	"github.com/kcp-carry/kcp-carry/pkg/carry/overlay"
	"github.com/kcp-carry/kcp-carry/pkg/carry/pins"
	"github.com/kcp-carry/kcp-carry/pkg/util/atomicfile"
)

type pinsResult struct {
	GoMod string `json:"goMod"`
	KCP   string `json:"kcp"`
	Match bool   `json:"match"`
	// Missing and Extra are replace directives ("old => new version")
	// the derived block has and go.mod lacks, and the other way round.
	Missing []string `json:"missing,omitempty"`
	Extra   []string `json:"extra,omitempty"`
	Marker  string   `json:"marker,omitempty"`
	Written bool     `json:"written"`
}

func replaceStrings(rs []pins.Replace) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}

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
	goModPath := filepath.Join(root, "go.mod")
	data, err := os.ReadFile(goModPath)
	if err != nil {
		return fail(stderr, "pins", err)
	}
	f, err := modfile.Parse(goModPath, data, nil)
	if err != nil {
		return fail(stderr, "pins", err)
	}
	kcpVersion, err := pins.KCPVersion(f)
	if err != nil {
		return fail(stderr, "pins", err)
	}
	src, err := pins.Fetch(ctx, root, kcpVersion)
	if err != nil {
		return fail(stderr, "pins", err)
	}
	want, err := pins.Derive(src)
	if err != nil {
		return fail(stderr, "pins", err)
	}
	diff := pins.Check(f, want, kcpVersion)
	res := pinsResult{
		GoMod: goModPath, KCP: pins.KCPModule + "@" + kcpVersion, Match: diff.Empty(),
		Missing: replaceStrings(diff.Missing), Extra: replaceStrings(diff.Extra), Marker: diff.Marker,
	}

	if o.write && !diff.Empty() {
		out, err := pins.Rewrite(goModPath, data, want, kcpVersion)
		if err != nil {
			return fail(stderr, "pins", err)
		}
		if err := atomicfile.Write(goModPath, out, 0o644); err != nil {
			return fail(stderr, "pins", err)
		}
		res.Written = true
	}

	if o.json {
		if err := writeJSON(stdout, res); err != nil {
			return fail(stderr, "pins", err)
		}
	} else {
		for _, l := range diff.Lines() {
			fmt.Fprintln(stdout, l)
		}
	}
	switch {
	case diff.Empty():
		fmt.Fprintf(stderr, "%s: kcp pins match %s\n", goModPath, res.KCP)
		return ExitOK
	case res.Written:
		fmt.Fprintf(stderr, "%s: rewrote kcp pins from %s\n", goModPath, res.KCP)
		return ExitOK
	default:
		fmt.Fprintf(stderr, "%s: kcp pins differ from %s (- in go.mod, + derived); run `carry pins --write`\n", goModPath, res.KCP)
		return ExitFail
	}
}

// runTreePins reports whether a kcp tree pins the fork where the carry was
// made; any other pin is refused (ExitFail).
func runTreePins(root, tree string, asJSON bool, stdout, stderr io.Writer) int {
	c, err := overlay.CheckTree(root, tree)
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
