// Command evidence runs the duel behind `make evidence`: the same hammer
// load against the pristine and the patched test shard, one at a time, and
// writes evidence/duel.json, evidence/lists-per-second.svg and
// evidence/README.md. See pkg/harness/measure and `evidence --help`. Exit codes: 0
// report written, 1 the measurement failed, 2 usage.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
	"github.com/kcp-carry/kcp-carry/pkg/harness/measure"
	"github.com/kcp-carry/kcp-carry/pkg/util/cmdline"
	"github.com/kcp-carry/kcp-carry/pkg/util/reporoot"
)

func main() {
	root, err := reporoot.Find(".")
	if err != nil {
		fmt.Fprintf(os.Stderr, "evidence: %v\n", err)
		os.Exit(2)
	}
	c, err := parseArgs(os.Args[1:], root, os.Stderr)
	if err == nil {
		c.Options.Command = "evidence"
		for _, a := range os.Args[1:] {
			c.Options.Command += " " + shellQuote(a)
		}
	}
	cmdline.Exit("evidence", c, err, 2)
}

// Run measures (or, with --render-only, only renders) and writes the report;
// it returns the exit code.
func (c *options) Run(ctx context.Context, stdout, stderr io.Writer) int {
	if c.RenderOnly {
		path := filepath.Join(c.Out, report.DuelFile)
		rep, err := report.Read(path)
		if err != nil {
			fmt.Fprintf(stderr, "evidence: --render-only: %v\n", err)
			return 1
		}
		if err := measure.Write(c.Out, rep); err != nil {
			fmt.Fprintf(stderr, "evidence: writing %s: %v\n", c.Out, err)
			return 1
		}
		fmt.Fprintf(stdout, "evidence: %s and %s rendered again from %s\n", report.ChartFile, report.ReadmeFile, path)
		return 0
	}
	o := c.Options
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	o.Logf = logf
	if c.Verbose {
		o.HammerLogf = logf
	}
	start := time.Now()
	if c.ShardedOnly {
		return c.runShardedOnly(ctx, stdout, stderr, logf, start)
	}
	if c.KCPOnly {
		return c.runKCPOnly(ctx, stdout, stderr, o, start)
	}
	rep, err := measure.Run(ctx, o)
	if err == nil && c.KCP != nil {
		k := *c.KCP
		k.Logf, k.HammerLogf = o.Logf, o.HammerLogf
		rep.RealKCP, err = measure.RunKCP(ctx, o, k)
	}
	var sharded *report.Sharded
	if err == nil && c.Sharded != nil {
		so := *c.Sharded
		so.Logf = logf
		sharded, err = measure.RunSharded(ctx, so)
	}
	if err != nil {
		fmt.Fprintf(stderr, "evidence: %v\nevidence: nothing written; %s is unchanged\n", err, c.Out)
		return 1
	}
	if sharded != nil {
		if err := measure.WriteSharded(c.Out, sharded); err != nil {
			fmt.Fprintf(stderr, "evidence: writing %s: %v\n", c.Out, err)
			return 1
		}
	}
	if err := measure.Write(c.Out, rep); err != nil {
		fmt.Fprintf(stderr, "evidence: writing %s: %v\n", c.Out, err)
		return 1
	}
	fmt.Fprintf(stdout, "evidence: %s, %s and %s in %s (%s)\n", report.DuelFile, report.ChartFile, report.ReadmeFile, c.Out, time.Since(start).Round(time.Second))
	for _, n := range rep.Notes {
		fmt.Fprintf(stdout, "evidence: note: %s\n", n)
	}
	return 0
}

// runShardedOnly measures the sharded section alone, writes it, and renders
// the README again from the duel.json already in the output directory.
func (c *options) runShardedOnly(ctx context.Context, stdout, stderr io.Writer, logf func(string, ...any), start time.Time) int {
	so := *c.Sharded
	so.Logf = logf
	sharded, err := measure.RunSharded(ctx, so)
	if err != nil {
		fmt.Fprintf(stderr, "evidence: %v\nevidence: nothing written; %s is unchanged\n", err, c.Out)
		return 1
	}
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		fmt.Fprintf(stderr, "evidence: %v\n", err)
		return 1
	}
	if err := measure.WriteSharded(c.Out, sharded); err != nil {
		fmt.Fprintf(stderr, "evidence: writing %s: %v\n", c.Out, err)
		return 1
	}
	fmt.Fprintf(stdout, "evidence: %s and %s in %s (%s)\n", report.ShardedFile, report.ShardedChartFile, c.Out, time.Since(start).Round(time.Second))
	rep, err := report.Read(filepath.Join(c.Out, report.DuelFile))
	if err != nil {
		fmt.Fprintf(stderr, "evidence: %s not rendered again (no duel to render it from): %v\n", report.ReadmeFile, err)
		return 0
	}
	if err := measure.Write(c.Out, rep); err != nil {
		fmt.Fprintf(stderr, "evidence: writing %s: %v\n", c.Out, err)
		return 1
	}
	fmt.Fprintf(stdout, "evidence: %s rendered again with the sharded section\n", report.ReadmeFile)
	return 0
}

// runKCPOnly measures the real-kcp section alone into the duel.json already
// in the output directory, and renders the report again.
func (c *options) runKCPOnly(ctx context.Context, stdout, stderr io.Writer, o measure.Options, start time.Time) int {
	path := filepath.Join(c.Out, report.DuelFile)
	rep, err := report.Read(path)
	if err != nil {
		fmt.Fprintf(stderr, "evidence: --kcp-only measures into an existing report: %v\n", err)
		return 1
	}
	k := *c.KCP
	k.Logf, k.HammerLogf = o.Logf, o.HammerLogf
	if rep.RealKCP, err = measure.RunKCP(ctx, o, k); err != nil {
		fmt.Fprintf(stderr, "evidence: %v\nevidence: nothing written; %s is unchanged\n", err, c.Out)
		return 1
	}
	// The README's command lines: the one that measured the rest, then
	// this one.
	rep.Setup.Command = strings.TrimSpace(rep.Setup.Command + "\n" + o.Command)
	if err := measure.Write(c.Out, rep); err != nil {
		fmt.Fprintf(stderr, "evidence: writing %s: %v\n", c.Out, err)
		return 1
	}
	fmt.Fprintf(stdout, "evidence: the real-kcp section measured again into %s, %s rendered again (%s)\n", path, report.ReadmeFile, time.Since(start).Round(time.Second))
	return 0
}

// shellQuote quotes a for a POSIX shell when it needs it.
func shellQuote(a string) string {
	if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/+") == "" {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}
