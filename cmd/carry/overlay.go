package main

import (
	"context"
	"io"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/carry/overlay"
)

// OverlayOptions are carry overlay's flags.
type OverlayOptions struct {
	commonOptions
	force bool
}

func NewOverlayOptions() *OverlayOptions { return &OverlayOptions{} }

func (o *OverlayOptions) AddFlags(fs *pflag.FlagSet) {
	o.commonOptions.AddFlags(fs)
	fs.BoolVar(&o.force, "force", false, "rebuild even if up to date, discarding hand edits in .overlay/")
}

func (o *OverlayOptions) Run(ctx context.Context, stdout, stderr io.Writer) int {
	c, err := o.loadCarry()
	if err != nil {
		return fail(stderr, "overlay", err)
	}
	res, err := overlay.Run(ctx, overlay.Options{
		Carry:      c,
		GoWorkPath: filepath.Join(c.Root, "go.work"),
		Progress:   stderr,
		Force:      o.force,
	})
	if err != nil {
		return fail(stderr, "overlay", err)
	}
	if o.json {
		if err := writeJSON(stdout, res); err != nil {
			return fail(stderr, "overlay", err)
		}
	}
	return ExitOK
}
