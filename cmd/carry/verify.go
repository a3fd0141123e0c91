package main

import (
	"context"
	"io"

	"github.com/kcp-carry/kcp-carry/pkg/carry/verify"
)

// VerifyOptions are carry verify's flags: only the common ones.
type VerifyOptions struct{ commonOptions }

func NewVerifyOptions() *VerifyOptions { return &VerifyOptions{} }

func (o *VerifyOptions) Run(ctx context.Context, stdout, stderr io.Writer) int {
	c, err := o.loadCarry()
	if err != nil {
		return fail(stderr, "verify", err)
	}
	report, err := verify.Run(ctx, verify.Options{Carry: c, Progress: stderr})
	if err != nil {
		return fail(stderr, "verify", err)
	}
	if o.json {
		if err := writeJSON(stdout, report); err != nil {
			return fail(stderr, "verify", err)
		}
	} else {
		report.WriteText(stdout)
	}
	if !report.OK() {
		return ExitFail
	}
	return ExitOK
}
