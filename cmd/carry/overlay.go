package main

import (
	"context"
	"io"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
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
	return runCarry(&o.commonOptions, "overlay", stdout, stderr, func(c *carryset.Carry) (*overlay.Result, error) {
		return overlay.Run(ctx, overlay.Options{
			Carry:      c,
			GoWorkPath: filepath.Join(c.Root, "go.work"),
			Progress:   stderr,
			Force:      o.force,
		})
	}, nil)
}
