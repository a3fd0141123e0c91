package main

import (
	"context"
	"io"
	"path/filepath"

	"github.com/kcp-carry/kcp-carry/pkg/carry/overlay"
)

func runOverlay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("overlay", "overlay [--force] [--json] [--root DIR]", stderr)
	force := fs.Bool("force", false, "rebuild even if up to date, discarding hand edits in .overlay/")
	if code, done := fs.parse(args); done {
		return code
	}
	root, err := fs.repoRoot()
	if err != nil {
		return fail(stderr, "overlay", err)
	}
	res, err := overlay.Run(ctx, overlay.Options{
		Root:       root,
		GoWorkPath: filepath.Join(root, "go.work"),
		Progress:   stderr,
		Force:      *force,
	})
	if err != nil {
		return fail(stderr, "overlay", err)
	}
	if fs.json {
		if err := writeJSON(stdout, res); err != nil {
			return fail(stderr, "overlay", err)
		}
	}
	return ExitOK
}
