package main

import (
	"context"
	"io"

	"github.com/kcp-carry/kcp-carry/pkg/carry/verify"
)

func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("verify", "verify [--json] [--root DIR]", stderr)
	if code, done := fs.parse(args); done {
		return code
	}
	root, err := fs.repoRoot()
	if err != nil {
		return fail(stderr, "verify", err)
	}
	report, err := verify.Run(ctx, verify.Options{Root: root, Progress: stderr})
	if err != nil {
		return fail(stderr, "verify", err)
	}
	if fs.json {
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
