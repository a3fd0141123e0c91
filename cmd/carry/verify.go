package main

import (
	"context"
	"io"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/verify"
)

// VerifyOptions are carry verify's flags.
type VerifyOptions struct {
	commonOptions
	// Race runs the tests under -race (the default, as kcp's unit job does).
	Race bool
}

func NewVerifyOptions() *VerifyOptions { return &VerifyOptions{Race: true} }

func (o *VerifyOptions) AddFlags(fs *pflag.FlagSet) {
	o.commonOptions.AddFlags(fs)
	fs.BoolVar(&o.Race, "race", o.Race, "run the tests under -race; --race=false runs the same steps without it (no -race compile of the fork's dependencies; a test then fails without its patch only by assertion or a runtime crash)")
}

func (o *VerifyOptions) Run(ctx context.Context, stdout, stderr io.Writer) int {
	return runCarry(&o.commonOptions, "verify", stdout, stderr, func(c *carryset.Carry) (*verify.Report, error) {
		return verify.Run(ctx, verify.Options{Carry: c, Progress: stderr, NoRace: !o.Race})
	}, func(w io.Writer, r *verify.Report) { r.WriteText(w) })
}
