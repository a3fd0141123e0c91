package main

import (
	"io"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
)

// loadCarry finds the repository and loads its carry, once, for the
// subcommand to hand to every step.
func (o *commonOptions) loadCarry() (*carryset.Carry, error) {
	root, err := o.repoRoot()
	if err != nil {
		return nil, err
	}
	return carryset.Load(root)
}

// runCarry is the shape of every subcommand that works on the carry: load
// it, do the work, print the result (as JSON with --json, or else with text;
// nil: nothing). A failure is reported as
// "carry <name>: <err>" (fail's exit status); a result whose OK method says
// false exits ExitFail after it is printed.
func runCarry[R any](o *commonOptions, name string, stdout, stderr io.Writer, do func(*carryset.Carry) (R, error), text func(io.Writer, R)) int {
	c, err := o.loadCarry()
	if err != nil {
		return fail(stderr, name, err)
	}
	res, err := do(c)
	if err != nil {
		return fail(stderr, name, err)
	}
	if o.json {
		if err := writeJSON(stdout, res); err != nil {
			return fail(stderr, name, err)
		}
	} else if text != nil {
		text(stdout, res)
	}
	if r, ok := any(res).(interface{ OK() bool }); ok && !r.OK() {
		return ExitFail
	}
	return ExitOK
}
