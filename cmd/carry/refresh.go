package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/refresh"
)

// RefreshOptions are carry refresh's flags.
type RefreshOptions struct {
	commonOptions
	module, newName, subject string
}

func NewRefreshOptions() *RefreshOptions { return &RefreshOptions{} }

func (o *RefreshOptions) AddFlags(fs *pflag.FlagSet) {
	o.commonOptions.AddFlags(fs)
	fs.StringVar(&o.module, "module", "", "refresh only this carried module (default: every edited module)")
	fs.StringVar(&o.newName, "new", "", "append the edits as this new patch file instead of folding them into the top patch")
	fs.StringVar(&o.subject, "subject", "", "commit subject of the --new patch")
}

func (o *RefreshOptions) Validate() error {
	if (o.newName == "") != (o.subject == "") {
		return errors.New("--new and --subject go together")
	}
	return nil
}

func (o *RefreshOptions) Run(ctx context.Context, stdout, stderr io.Writer) int {
	return runCarry(&o.commonOptions, "refresh", stdout, stderr, func(c *carryset.Carry) (*refresh.Result, error) {
		opts := refresh.Options{Carry: c, Module: o.module, Progress: stderr}
		if o.newName != "" {
			opts.New = &refresh.NewPatch{Name: o.newName, Subject: o.subject}
		}
		return refresh.Run(ctx, opts)
	}, nil)
}
