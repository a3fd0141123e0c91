package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/soak"
	"github.com/kcp-carry/kcp-carry/pkg/util/cmdline"
)

// options are the soak command's flags, in kcp's Options pattern: AddFlags
// binds them, Complete derives the variants and resources, Validate checks
// them, Run soaks and prints the result.
type options struct {
	run soak.Options
	// kcps, kcpArgs and listerShapes spell the variants (soak.ParseVariants).
	kcps, kcpArgs, listerShapes []string
	resources                   string
	json                        bool // print the result as JSON
	// redraw is an earlier soak's output directory to report again
	// (soak.Redraw) instead of soaking.
	redraw string
}

// NewOptions returns make soak's defaults: bin/kcp under the seed load for
// 30 minutes, its output in .build/soak.
func NewOptions() *options {
	o := &options{run: soak.DefaultOptions(), kcps: []string{"bin/kcp"}, resources: "clusterroles"}
	o.run.OutDir = filepath.Join(".build", "soak")
	return o
}

// AddFlags binds the options to fs.
func (o *options) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.kcps, "kcp", o.kcps, "a kcp to soak, NAME=BINARY or BINARY (named by its file name); repeat it to run several side by side")
	fs.StringArrayVar(&o.kcpArgs, "kcp-arg", nil, "NAME=FLAG: one more flag of kcp start for the kcp NAME (e.g. stock=--watch-cache=false); repeatable")
	fs.StringArrayVar(&o.listerShapes, "lister-shapes", nil, "[NAME=]SHAPES: the listers' request shapes, cycled, for the kcp NAME or every kcp without its own: <v1|v1beta1|kcp|json>:<rv>[:paged] (json: full-object LISTs; default: the hammer's wildcard partial-metadata mix)")
	fs.StringVar(&o.resources, "resources", o.resources, "resources to seed, list and write: clusterroles, configmaps, apiexports")
	fs.DurationVar(&o.run.Interval, "interval", o.run.Interval, "time between samples of each kcp's /metrics")
	fs.DurationSliceVar(&o.run.ProfileAt, "profile-at", o.run.ProfileAt, "times of the heap profiles besides the one at the end (those past --duration are skipped)")
	fs.StringVar(&o.run.OutDir, "out", o.run.OutDir, "output directory: soak.json, <kcp>/heap-<time>.pb.gz, memory.svg, etcd.svg")
	o.run.Load.AddFlags(fs)
	fs.BoolVar(&o.json, "json", false, "print the result as JSON")
	fs.StringVar(&o.redraw, "redraw", "", "an earlier soak's --out: diff its heap profiles, draw its charts and print its report again, without starting kcp")
}

// Complete derives the variants and the resources from their flags.
func (o *options) Complete() error {
	var errs []error
	var err error
	if o.run.Variants, err = soak.ParseVariants(o.kcps, o.kcpArgs, o.listerShapes); err != nil {
		errs = append(errs, err)
	}
	if o.run.Resources, err = hammer.ParseResources(o.resources); err != nil {
		errs = append(errs, fmt.Errorf("--resources: %w", err))
	}
	return errors.Join(errs...)
}

// Validate checks the options before kcp is started.
func (o *options) Validate() error {
	if o.redraw != "" {
		return nil
	}
	return o.run.Validate()
}

// Run soaks the kcps, logging progress to stderr and printing the result to
// stdout; it returns the exit code.
func (o *options) Run(ctx context.Context, stdout, stderr io.Writer) int {
	opts := o.run
	opts.Logf = func(format string, args ...any) {
		fmt.Fprintf(stderr, "%s %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	var res *soak.Result
	var err error
	if o.redraw != "" {
		res, err = soak.Redraw(o.redraw)
	} else {
		res, err = soak.Run(ctx, opts)
	}
	if err != nil {
		fmt.Fprintf(stderr, "soak: %v\n", err)
		if res == nil {
			return 1
		}
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(res)
	} else {
		err = res.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "soak: writing the result: %v\n", err)
		return 1
	}
	if !res.Clean() {
		return 1
	}
	return 0
}

// parseArgs parses the command line (without the program name); a bad flag
// is an error naming it; -h/--help returns pflag.ErrHelp.
func parseArgs(args []string, stderr io.Writer) (*options, error) {
	o := NewOptions()
	if err := cmdline.Parse("soak", o, args, "", stderr); err != nil {
		return nil, err
	}
	return o, nil
}
