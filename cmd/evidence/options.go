package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/measure"
	"github.com/kcp-carry/kcp-carry/pkg/util/cmdline"
)

// options are the evidence command's flags, in kcp's Options pattern:
// AddFlags binds them, Complete turns the list and shape flags into
// measure.Options (and the real-kcp and sharded sections), Validate checks
// the result, Run measures and writes the report (main.go).
type options struct {
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
	// KCPOnly measures the real-kcp section alone, into the report already
	// in Out.
	KCPOnly bool

	// What the flags give as text, turned into the fields above by Complete.
	steps, stepLister         string
	kcpAnnotations, kcpLister string
	shardedBin                string
	kcp                       measure.KCPOptions
	sharded                   measure.ShardedOptions
	completeErrs              []error
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

--listers, --watchers, --writers, --duration and --max-requests are the duel's
load on each shard; --objects and --annotations what every run seeds.

Exit codes: 0 report written, 1 the measurement failed, 2 usage.

Flags:
`

// NewOptions returns make evidence's defaults for the repository at root.
func NewOptions(root string) *options {
	d := measure.DefaultOptions()
	d.Root = root
	k := measure.KCPOptions{Ratio: measure.DefaultRatioOptions()}
	return &options{
		Options:        d,
		Out:            filepath.Join(root, "evidence"),
		steps:          measure.JoinInts(d.Steps),
		stepLister:     d.StepLister.Name(),
		kcp:            k,
		kcpAnnotations: measure.JoinInts(k.Ratio.Annotations),
		kcpLister:      k.Ratio.Lister.Name(),
		sharded:        measure.DefaultShardedOptions(""),
	}
}

// AddFlags binds the options to fs.
func (c *options) AddFlags(fs *pflag.FlagSet) {
	o, k := &c.Options, &c.kcp
	fs.StringVar(&c.Out, "out", c.Out, "directory of the report")
	fs.StringVar(&o.PristineBinary, "pristine-binary", "", "prebuilt pristine test shard (default: build it, GOWORK=off, into bin/shards)")
	fs.StringVar(&o.PatchedBinary, "patched-binary", "", "prebuilt patched test shard (default: build it with go.work into bin/shards)")
	o.Load.AddFlags(fs)
	fs.DurationVar(&o.StepDuration, "step-duration", o.StepDuration, "single-lister rounds and scaling steps: bound of each run")
	fs.Int64Var(&o.StepMaxRequests, "step-max-requests", o.StepMaxRequests, "single-lister rounds and scaling steps: request budget of each run")
	fs.IntVar(&o.Rounds, "rounds", o.Rounds, "single-lister rounds per shard")
	fs.StringVar(&c.steps, "steps", c.steps, "scaling: numbers of listers, growing, comma-separated")
	fs.StringVar(&c.stepLister, "step-lister", c.stepLister, "single-lister and scaling: the request shape of every lister, <v1|v1beta1|kcp>:<rv>[:paged]")
	cmdline.ListVar(fs, &o.Clusters, "clusters", o.Clusters, "logical clusters to seed, comma-separated")
	fs.StringVar(&o.Note, "note", "", "a remark recorded with the setup, e.g. \"The machine was shared.\"")
	fs.StringVar(&k.PatchedBinary, "kcp-patched", "", "real kcp: the kcp built with the carry (bin/kcp); with --kcp-pristine adds the real-kcp section")
	fs.StringVar(&k.PristineBinary, "kcp-pristine", "", "real kcp: the same kcp built without it (bin/kcp-pristine)")
	fs.IntVar(&k.Ratio.Objects, "kcp-objects", k.Ratio.Objects, "real kcp, single client: ClusterRoles in all, spread over the workspaces")
	fs.IntVar(&k.Ratio.Workspaces, "kcp-workspaces", k.Ratio.Workspaces, "real kcp, single client: logical clusters holding them (root and N-1 workspaces)")
	fs.StringVar(&c.kcpAnnotations, "kcp-annotations", c.kcpAnnotations, "real kcp, single client: extra annotations per ClusterRole, comma-separated (one ratio each)")
	fs.IntVar(&k.Ratio.Rounds, "kcp-rounds", k.Ratio.Rounds, "real kcp, single client: rounds, alternating which kcp goes first")
	fs.DurationVar(&k.Ratio.Duration, "kcp-duration", k.Ratio.Duration, "real kcp, single client: bound of each run (partial and full LISTs each)")
	fs.StringVar(&c.kcpLister, "kcp-lister", c.kcpLister, "real kcp, single client: the partial LIST, <v1|v1beta1>:<rv>")
	fs.StringVar(&c.shardedBin, "sharded-bin", "", "sharded kcp: `DIR` of make sharded's servers (kcp, kcp-front-proxy, cache-server, virtual-workspaces, and each -pristine); adds the sharded section")
	fs.DurationVar(&c.sharded.Duration, "sharded-duration", c.sharded.Duration, "sharded kcp: bound of the carried load on each shard and the cache server")
	fs.DurationVar(&c.sharded.StockBound, "sharded-stock-bound", c.sharded.StockBound, "sharded kcp: bound of the stock load on shard 1 (it should die long before)")
	fs.BoolVar(&c.ShardedOnly, "sharded-only", false, "measure only the sharded section (needs --sharded-bin); the README is rendered again from DIR/duel.json")
	fs.BoolVar(&c.KCPOnly, "kcp-only", false, "measure only the real-kcp section (needs --kcp-patched and --kcp-pristine) into DIR/duel.json, and render the README again")
	// -v as well as --v: pflag reads a single dash as shorthand letters.
	fs.BoolVarP(&c.Verbose, "v", "v", false, "log the hammer's phases")
	fs.BoolVar(&c.RenderOnly, "render-only", false, "measure nothing: render the chart and README.md again from DIR/duel.json (e.g. to quote a new benchstat.txt)")
}

// Complete turns the text flags into the options, and the real-kcp and
// sharded flags into their sections when they are given; it reports every
// list or shape flag it cannot parse.
func (c *options) Complete() error {
	o := &c.Options
	var errs []error
	o.Steps = parseInts("--steps", c.steps, &errs)
	s, err := hammer.ParseListerShape(c.stepLister)
	if err != nil {
		errs = append(errs, fmt.Errorf("--step-lister: %w", err))
	}
	o.StepLister = s
	if c.kcp.PatchedBinary != "" || c.kcp.PristineBinary != "" {
		k := c.kcp
		if kv, err := hammer.ParseListerShape(c.kcpLister); err != nil {
			errs = append(errs, fmt.Errorf("--kcp-lister: %w", err))
		} else {
			k.Ratio.Lister = kv
		}
		k.Ratio.Annotations = parseInts("--kcp-annotations", c.kcpAnnotations, &errs)
		c.KCP = &k
	}
	if c.shardedBin != "" {
		sharded := c.sharded
		d := measure.DefaultShardedOptions(c.shardedBin)
		sharded.Patched, sharded.Pristine = d.Patched, d.Pristine
		c.Sharded = &sharded
	}
	return errors.Join(errs...)
}

// Validate reports every bad flag, naming it.
func (c *options) Validate() error {
	var errs []error
	if k := c.KCP; k != nil {
		if k.PatchedBinary == "" || k.PristineBinary == "" {
			errs = append(errs, errors.New("--kcp-patched and --kcp-pristine go together"))
		}
		if err := k.Ratio.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if s := c.Sharded; s != nil {
		if s.Duration <= 0 || s.Duration > 5*time.Minute {
			errs = append(errs, fmt.Errorf("--sharded-duration: must be in (0, 5m], got %s", s.Duration))
		}
		if s.StockBound <= 0 || s.StockBound > 5*time.Minute {
			errs = append(errs, fmt.Errorf("--sharded-stock-bound: must be in (0, 5m], got %s", s.StockBound))
		}
	} else if c.ShardedOnly {
		errs = append(errs, errors.New("--sharded-only needs --sharded-bin"))
	}
	if c.KCPOnly && c.KCP == nil {
		errs = append(errs, errors.New("--kcp-only needs --kcp-patched and --kcp-pristine"))
	}
	if c.KCPOnly && c.ShardedOnly {
		errs = append(errs, errors.New("--kcp-only and --sharded-only exclude each other"))
	}
	if c.Out == "" {
		errs = append(errs, errors.New("--out: empty"))
	}
	if len(errs) == 0 {
		if err := c.Options.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// parseArgs parses the command line (without the program name); root is the
// repository. A bad flag is an error naming it; -h/--help returns
// pflag.ErrHelp.
func parseArgs(args []string, root string, stderr io.Writer) (*options, error) {
	c := NewOptions(root)
	if err := cmdline.Parse("evidence", c, args, usageHead, stderr); err != nil {
		return nil, err
	}
	return c, nil
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
