package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/harness/soak"
	"github.com/kcp-carry/kcp-carry/pkg/util/cmdline"
)

// options are the soak command's flags, in kcp's Options pattern: AddFlags
// binds them onto soak.Options, Validate checks them, Run soaks and prints
// the result.
type options struct {
	run  soak.Options
	json bool // print the result as JSON
}

// NewOptions returns make soak's defaults: bin/kcp under the duel load for
// 10 minutes.
func NewOptions() *options {
	o := &options{run: soak.DefaultOptions()}
	o.run.Binary = "bin/kcp"
	return o
}

// AddFlags binds the options to fs.
func (o *options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.run.Binary, "kcp", o.run.Binary, "the kcp binary to soak")
	o.run.Load.AddFlags(fs)
	fs.BoolVar(&o.json, "json", false, "print the result as JSON")
}

// Complete has nothing to derive: every flag is used as given.
func (o *options) Complete() error { return nil }

// Validate checks the options before kcp is started.
func (o *options) Validate() error { return o.run.Validate() }

// Run soaks the kcp binary, logging progress to stderr and printing the
// result to stdout; it returns the exit code.
func (o *options) Run(ctx context.Context, stdout, stderr io.Writer) int {
	opts := o.run
	opts.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	res, err := soak.Run(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "soak: %v\n", err)
		return 1
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
