package main

import (
	"context"
	"io"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/verify"
)

// VerifyOptions are carry verify's flags: only the common ones.
type VerifyOptions struct{ commonOptions }

func NewVerifyOptions() *VerifyOptions { return &VerifyOptions{} }

func (o *VerifyOptions) Run(ctx context.Context, stdout, stderr io.Writer) int {
	return runCarry(&o.commonOptions, "verify", stdout, stderr, func(c *carryset.Carry) (*verify.Report, error) {
		return verify.Run(ctx, verify.Options{Carry: c, Progress: stderr})
	}, func(w io.Writer, r *verify.Report) { r.WriteText(w) })
}
