package main

import (
	"context"
	"fmt"
	"io"

	"github.com/kcp-carry/kcp-carry/pkg/carry/refresh"
)

func runRefresh(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("refresh", `refresh [--module PATH] [--new NNNN-name.patch --subject "UPSTREAM: <carry>: ..."] [--json] [--root DIR]`, stderr)
	mod := fs.String("module", "", "refresh only this carried module (default: every edited module)")
	newName := fs.String("new", "", "append the edits as this new patch file instead of folding them into the top patch")
	subject := fs.String("subject", "", "commit subject of the --new patch")
	if code, done := fs.parse(args); done {
		return code
	}
	if (*newName == "") != (*subject == "") {
		fmt.Fprintln(stderr, "carry refresh: --new and --subject go together")
		fs.Usage()
		return ExitUsage
	}
	root, err := fs.repoRoot()
	if err != nil {
		return fail(stderr, "refresh", err)
	}
	opts := refresh.Options{Root: root, Module: *mod, Progress: stderr}
	if *newName != "" {
		opts.New = &refresh.NewPatch{Name: *newName, Subject: *subject}
	}
	res, err := refresh.Run(ctx, opts)
	if err != nil {
		return fail(stderr, "refresh", err)
	}
	if fs.json {
		if err := writeJSON(stdout, res); err != nil {
			return fail(stderr, "refresh", err)
		}
	}
	return ExitOK
}
