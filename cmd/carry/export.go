package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/carry/export"
)

// ExportOptions are carry export's flags.
type ExportOptions struct {
	commonOptions
	out, verifyReport, suite, bench string
	force, noVerify                 bool
	kcpTrees                        []string
}

func NewExportOptions() *ExportOptions { return &ExportOptions{} }

func (o *ExportOptions) AddFlags(fs *pflag.FlagSet) {
	o.commonOptions.AddFlags(fs)
	fs.StringVar(&o.out, "out", "", "directory for the patch series and PR.md (must not exist or be empty, unless --force)")
	fs.BoolVar(&o.force, "force", false, "replace a non-empty --out directory")
	fs.StringVar(&o.verifyReport, "verify-report", "", "quote `FILE`, a carry verify --json report, instead of running carry verify (minutes)")
	fs.BoolVar(&o.noVerify, "no-verify", false, "do not run carry verify; PR.md then says it was not run")
	fs.StringVar(&o.suite, "suite-report", "", "live suite result to quote (default ROOT/"+export.DefaultSuiteReport+" if present)")
	fs.StringVar(&o.bench, "benchstat", "", "benchstat output to quote (default ROOT/"+export.DefaultBenchstat+" if present)")
	fs.StringArrayVar(&o.kcpTrees, "kcp-source", nil, "kcp source tree that ROOT/kcp-patches must apply to with git am, checked on a scratch copy (repeatable)")
}

func (o *ExportOptions) Validate() error {
	if o.out == "" {
		return errors.New("--out DIR is required")
	}
	if o.noVerify && o.verifyReport != "" {
		return errors.New("--verify-report and --no-verify exclude each other")
	}
	return nil
}

func (o *ExportOptions) Run(ctx context.Context, stdout, stderr io.Writer) int {
	root, err := o.repoRoot()
	if err != nil {
		return fail(stderr, "export", err)
	}
	res, err := export.Run(ctx, export.Options{
		Root:         root,
		OutDir:       o.out,
		Force:        o.force,
		VerifyReport: o.verifyReport,
		NoVerify:     o.noVerify,
		SuiteReport:  o.suite,
		Benchstat:    o.bench,
		KCPTrees:     o.kcpTrees,
		Progress:     stderr,
	})
	if err != nil {
		return fail(stderr, "export", err)
	}
	if o.json {
		if err := writeJSON(stdout, res); err != nil {
			return fail(stderr, "export", err)
		}
		return ExitOK
	}
	fmt.Fprintf(stdout, "%d patches for %s at %s in %s:\n", len(res.Patches), res.Repo, res.Base, res.OutDir)
	for _, p := range res.Patches {
		fmt.Fprintf(stdout, "  %s  (%s, from %s)\n", p.File, p.Module, p.Source)
	}
	for _, p := range res.KCPPatches {
		fmt.Fprintf(stdout, "  %s  (for kcp-dev/kcp)\n", p.File)
	}
	fmt.Fprintf(stdout, "  %s\n", export.PRFile)
	return ExitOK
}
