package main

import (
	"context"
	"fmt"
	"io"

	"github.com/kcp-carry/kcp-carry/pkg/carry/export"
)

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("export", "export --out DIR [--force] [--verify-report FILE | --no-verify] [--suite-report FILE] [--benchstat FILE] [--kcp-source DIR ...] [--json] [--root DIR]", stderr)
	out := fs.String("out", "", "directory for the patch series and PR.md (must not exist or be empty, unless --force)")
	force := fs.Bool("force", false, "replace a non-empty --out directory")
	verifyReport := fs.String("verify-report", "", "quote this `carry verify --json` report instead of running carry verify (minutes)")
	noVerify := fs.Bool("no-verify", false, "do not run carry verify; PR.md then says it was not run")
	suite := fs.String("suite-report", "", "live suite result to quote (default ROOT/"+export.DefaultSuiteReport+" if present)")
	bench := fs.String("benchstat", "", "benchstat output to quote (default ROOT/"+export.DefaultBenchstat+" if present)")
	var kcpTrees cmdFlags
	fs.Var(&kcpTrees, "kcp-source", "kcp source tree that ROOT/kcp-patches must apply to with git am, checked on a scratch copy (repeatable)")
	if code, done := fs.parse(args); done {
		return code
	}
	if *out == "" {
		fmt.Fprintln(stderr, "carry export: --out DIR is required")
		fs.Usage()
		return ExitUsage
	}
	if *noVerify && *verifyReport != "" {
		fmt.Fprintln(stderr, "carry export: --verify-report and --no-verify exclude each other")
		fs.Usage()
		return ExitUsage
	}
	root, err := fs.repoRoot()
	if err != nil {
		return fail(stderr, "export", err)
	}
	res, err := export.Run(ctx, export.Options{
		Root:         root,
		OutDir:       *out,
		Force:        *force,
		VerifyReport: *verifyReport,
		NoVerify:     *noVerify,
		SuiteReport:  *suite,
		Benchstat:    *bench,
		KCPTrees:     kcpTrees,
		Progress:     stderr,
	})
	if err != nil {
		return fail(stderr, "export", err)
	}
	if fs.json {
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
