package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/measure"
)

// commandLine is a parsed evidence command line.
type commandLine struct {
	Options measure.Options
	// Out is the directory the report goes to.
	Out     string
	Verbose bool
	// RenderOnly re-renders the report from Out/duel.json, measuring nothing.
	RenderOnly bool
	// KCP, when --kcp-patched and --kcp-pristine are given, adds the
	// measurements on real kcp.
	KCP *measure.KCPOptions
	// Sharded, with --sharded-bin, adds the measurement in kcp's sharded
	// topology; ShardedOnly runs that alone.
	Sharded     *measure.ShardedOptions
	ShardedOnly bool
}

const usageHead = `Usage: evidence [flags]

Runs the same hammer load against the test shard linked against the
pristine fork (GOWORK=off) and the one linked against the carry (go.work),
one at a time, and writes DIR/duel.json, DIR/lists-per-second.svg and
DIR/README.md (quoting DIR/benchstat.txt from make bench, if present):
  - the duel: the full load until its bound or the shard's death;
  - a single lister, no writers, in alternating rounds: the throughput ratio;
  - listers only, more at each step: throughput, and whether pristine dies.
A run that fails leaves the previous report in place.

Exit codes: 0 report written, 1 the measurement failed, 2 usage.

Flags:
`

// ParseArgs parses the command line (without the program name); root is the
// repository. Usage and errors go to stderr; a bad flag is an error naming it.
func parseArgs(args []string, root string, stderr io.Writer) (*commandLine, error) {
	d := measure.DefaultOptions()
	d.Root = root
	fs := flag.NewFlagSet("evidence", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageHead)
		fs.PrintDefaults()
	}
	cli := &commandLine{Options: d}
	o := &cli.Options
	fs.StringVar(&cli.Out, "out", filepath.Join(root, "evidence"), "directory of the report")
	fs.StringVar(&o.PristineBinary, "pristine-binary", "", "prebuilt pristine test shard (default: build it, GOWORK=off, into bin/shards)")
	fs.StringVar(&o.PatchedBinary, "patched-binary", "", "prebuilt patched test shard (default: build it with go.work into bin/shards)")
	fs.DurationVar(&o.Duration, "duration", d.Duration, "duel: bound of the load on each shard")
	fs.Int64Var(&o.MaxRequests, "max-requests", d.MaxRequests, "duel: request budget on each shard")
	fs.IntVar(&o.Listers, "listers", d.Listers, "duel: listers (the hammer's default mix of request shapes, requestshape.HammerListers)")
	fs.IntVar(&o.Watchers, "watchers", d.Watchers, "duel: watchers")
	fs.IntVar(&o.Writers, "writers", d.Writers, "duel: label writers")
	fs.DurationVar(&o.StepDuration, "step-duration", d.StepDuration, "single-lister rounds and scaling steps: bound of each run")
	fs.Int64Var(&o.StepMaxRequests, "step-max-requests", d.StepMaxRequests, "single-lister rounds and scaling steps: request budget of each run")
	fs.IntVar(&o.Rounds, "rounds", d.Rounds, "single-lister rounds per shard")
	steps := fs.String("steps", measure.JoinInts(d.Steps), "scaling: numbers of listers, growing, comma-separated")
	stepLister := fs.String("step-lister", d.StepLister.Name(), "single-lister and scaling: the request shape of every lister, <v1|v1beta1|kcp>:<rv>[:paged]")
	clusters := fs.String("clusters", strings.Join(d.Clusters, ","), "logical clusters to seed, comma-separated")
	fs.IntVar(&o.Objects, "objects", d.Objects, "objects per logical cluster and resource")
	fs.StringVar(&o.Note, "note", "", "a remark recorded with the setup, e.g. \"The machine was shared.\"")
	k := measure.KCPOptions{Ratio: measure.DefaultRatioOptions()}
	fs.StringVar(&k.PatchedBinary, "kcp-patched", "", "real kcp: the kcp built with the carry (bin/kcp); with --kcp-pristine adds the real-kcp section")
	fs.StringVar(&k.PristineBinary, "kcp-pristine", "", "real kcp: the same kcp built without it (bin/kcp-pristine)")
	fs.IntVar(&k.Ratio.Objects, "kcp-objects", k.Ratio.Objects, "real kcp, single client: ClusterRoles in all, spread over the workspaces")
	fs.IntVar(&k.Ratio.Workspaces, "kcp-workspaces", k.Ratio.Workspaces, "real kcp, single client: logical clusters holding them (root and N-1 workspaces)")
	annotations := fs.String("kcp-annotations", measure.JoinInts(k.Ratio.Annotations), "real kcp, single client: extra annotations per ClusterRole, comma-separated (one ratio each)")
	fs.IntVar(&k.Ratio.Rounds, "kcp-rounds", k.Ratio.Rounds, "real kcp, single client: rounds, alternating which kcp goes first")
	fs.DurationVar(&k.Ratio.Duration, "kcp-duration", k.Ratio.Duration, "real kcp, single client: bound of each run (partial and full LISTs each)")
	kcpLister := fs.String("kcp-lister", k.Ratio.Lister.Name(), "real kcp, single client: the partial LIST, <v1|v1beta1>:<rv>")
	shardedBin := fs.String("sharded-bin", "", "sharded kcp: the directory of `make sharded`'s servers (kcp, kcp-front-proxy, cache-server, virtual-workspaces, and each -pristine); adds the sharded section")
	sharded := measure.DefaultShardedOptions("")
	fs.DurationVar(&sharded.Duration, "sharded-duration", sharded.Duration, "sharded kcp: bound of the carried load on each shard and the cache server")
	fs.DurationVar(&sharded.StockBound, "sharded-stock-bound", sharded.StockBound, "sharded kcp: bound of the stock load on shard 1 (it should die long before)")
	fs.BoolVar(&cli.ShardedOnly, "sharded-only", false, "measure only the sharded section (needs --sharded-bin); the README is rendered again from DIR/duel.json")
	fs.BoolVar(&cli.Verbose, "v", false, "log the hammer's phases")
	fs.BoolVar(&cli.RenderOnly, "render-only", false, "measure nothing: render the chart and README.md again from DIR/duel.json (e.g. to quote a new benchstat.txt)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var errs []error
	o.Steps = parseInts("--steps", *steps, &errs)
	s, err := hammer.ParseListerShape(*stepLister)
	if err != nil {
		errs = append(errs, fmt.Errorf("--step-lister: %w", err))
	}
	o.StepLister = s
	if k.PatchedBinary != "" || k.PristineBinary != "" {
		if k.PatchedBinary == "" || k.PristineBinary == "" {
			errs = append(errs, errors.New("--kcp-patched and --kcp-pristine go together"))
		}
		if kv, err := hammer.ParseListerShape(*kcpLister); err != nil {
			errs = append(errs, fmt.Errorf("--kcp-lister: %w", err))
		} else {
			k.Ratio.Lister = kv
		}
		k.Ratio.Annotations = parseInts("--kcp-annotations", *annotations, &errs)
		if err := k.Ratio.Validate(); err != nil {
			errs = append(errs, err)
		}
		cli.KCP = &k
	}
	if *shardedBin != "" {
		d := measure.DefaultShardedOptions(*shardedBin)
		sharded.Patched, sharded.Pristine = d.Patched, d.Pristine
		if sharded.Duration <= 0 || sharded.Duration > 5*time.Minute {
			errs = append(errs, fmt.Errorf("--sharded-duration: must be in (0, 5m], got %s", sharded.Duration))
		}
		if sharded.StockBound <= 0 || sharded.StockBound > 5*time.Minute {
			errs = append(errs, fmt.Errorf("--sharded-stock-bound: must be in (0, 5m], got %s", sharded.StockBound))
		}
		cli.Sharded = &sharded
	} else if cli.ShardedOnly {
		errs = append(errs, errors.New("--sharded-only needs --sharded-bin"))
	}
	o.Clusters = nil
	for _, c := range strings.Split(*clusters, ",") {
		if c = strings.TrimSpace(c); c != "" {
			o.Clusters = append(o.Clusters, c)
		}
	}
	if cli.Out == "" {
		errs = append(errs, errors.New("--out: empty"))
	}
	if len(errs) == 0 {
		if err := o.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return cli, nil
}

// parseInts parses a comma-separated list of numbers, adding an error
// naming flag for each word that is not one.
func parseInts(flag, list string, errs *[]error) []int {
	var out []int
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("%s: %q is not a number", flag, f))
			continue
		}
		out = append(out, n)
	}
	return out
}
