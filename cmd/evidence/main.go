// Command evidence runs the duel behind `make evidence`: the same hammer
// load against the pristine and the patched test shard, one at a time, and
// writes evidence/duel.json, evidence/lists-per-second.svg and
// evidence/README.md. See pkg/harness/measure and `evidence --help`. Exit codes: 0
// report written, 1 the measurement failed, 2 usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/harness/measure"
	"github.com/kcp-carry/kcp-carry/pkg/harness/report"
	"github.com/kcp-carry/kcp-carry/pkg/util/reporoot"
)

func main() {
	os.Exit(run())
}

func run() int {
	root, err := reporoot.Find(".")
	if err != nil {
		fmt.Fprintf(os.Stderr, "evidence: %v\n", err)
		return 2
	}
	cli, err := parseArgs(os.Args[1:], root, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "evidence: %v\n(see evidence --help)\n", err)
		return 2
	}
	if cli.RenderOnly {
		path := filepath.Join(cli.Out, report.DuelFile)
		rep, err := report.Read(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "evidence: --render-only: %v\n", err)
			return 1
		}
		if err := measure.Write(cli.Out, rep); err != nil {
			fmt.Fprintf(os.Stderr, "evidence: writing %s: %v\n", cli.Out, err)
			return 1
		}
		fmt.Printf("evidence: %s and %s rendered again from %s\n", report.ChartFile, report.ReadmeFile, path)
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	o := cli.Options
	o.Command = "evidence"
	for _, a := range os.Args[1:] {
		o.Command += " " + shellQuote(a)
	}
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	o.Logf = logf
	if cli.Verbose {
		o.HammerLogf = logf
	}
	start := time.Now()
	if cli.ShardedOnly {
		return runShardedOnly(ctx, cli, logf, start)
	}
	rep, err := measure.Run(ctx, o)
	if err == nil && cli.KCP != nil {
		k := *cli.KCP
		k.Logf, k.HammerLogf = o.Logf, o.HammerLogf
		rep.RealKCP, err = measure.RunKCP(ctx, o, k)
	}
	var sharded *measure.Sharded
	if err == nil && cli.Sharded != nil {
		so := *cli.Sharded
		so.Logf = logf
		sharded, err = measure.RunSharded(ctx, so)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "evidence: %v\nevidence: nothing written; %s is unchanged\n", err, cli.Out)
		return 1
	}
	if sharded != nil {
		if err := measure.WriteSharded(cli.Out, sharded); err != nil {
			fmt.Fprintf(os.Stderr, "evidence: writing %s: %v\n", cli.Out, err)
			return 1
		}
	}
	if err := measure.Write(cli.Out, rep); err != nil {
		fmt.Fprintf(os.Stderr, "evidence: writing %s: %v\n", cli.Out, err)
		return 1
	}
	fmt.Printf("evidence: %s, %s and %s in %s (%s)\n", report.DuelFile, report.ChartFile, report.ReadmeFile, cli.Out, time.Since(start).Round(time.Second))
	for _, n := range rep.Notes {
		fmt.Printf("evidence: note: %s\n", n)
	}
	return 0
}

// runShardedOnly measures the sharded section alone, writes it, and renders
// the README again from the duel.json already in the output directory.
func runShardedOnly(ctx context.Context, cli *commandLine, logf func(string, ...any), start time.Time) int {
	so := *cli.Sharded
	so.Logf = logf
	sharded, err := measure.RunSharded(ctx, so)
	if err != nil {
		fmt.Fprintf(os.Stderr, "evidence: %v\nevidence: nothing written; %s is unchanged\n", err, cli.Out)
		return 1
	}
	if err := os.MkdirAll(cli.Out, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "evidence: %v\n", err)
		return 1
	}
	if err := measure.WriteSharded(cli.Out, sharded); err != nil {
		fmt.Fprintf(os.Stderr, "evidence: writing %s: %v\n", cli.Out, err)
		return 1
	}
	fmt.Printf("evidence: %s and %s in %s (%s)\n", measure.ShardedFile, measure.ShardedChartFile, cli.Out, time.Since(start).Round(time.Second))
	rep, err := report.Read(filepath.Join(cli.Out, report.DuelFile))
	if err != nil {
		fmt.Fprintf(os.Stderr, "evidence: %s not rendered again (no duel to render it from): %v\n", report.ReadmeFile, err)
		return 0
	}
	if err := measure.Write(cli.Out, rep); err != nil {
		fmt.Fprintf(os.Stderr, "evidence: writing %s: %v\n", cli.Out, err)
		return 1
	}
	fmt.Printf("evidence: %s rendered again with the sharded section\n", report.ReadmeFile)
	return 0
}

// shellQuote quotes a for a POSIX shell when it needs it.
func shellQuote(a string) string {
	if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/+") == "" {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}
