package measure

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
	"github.com/kcp-carry/kcp-carry/pkg/evidence/report/chart"
	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/harness/shardedload"
	"github.com/kcp-carry/kcp-carry/pkg/util/atomicfile"
)

// ShardedOptions configure the measurement in kcp's sharded topology.
type ShardedOptions struct {
	// Patched and Pristine are the servers with and without the carry
	// (bin/<server> and bin/<server>-pristine of `make sharded`).
	Patched, Pristine server.TopologyBinaries
	// Duration bounds the carried load on each shard and the cache server;
	// the stock load on shard 1 runs until it dies or StockBound.
	Duration, StockBound time.Duration
	// Dir holds the topologies' root directories (a temporary directory
	// when empty; removed afterwards either way).
	Dir string
	// Env are the servers' extra environment variables.
	Env  []string
	Logf func(format string, args ...any)
}

// DefaultShardedOptions are `make evidence`'s (binaries in bin/).
func DefaultShardedOptions(binDir string) ShardedOptions {
	return ShardedOptions{
		Patched: server.TopologyBinariesIn(binDir, ""), Pristine: server.TopologyBinariesIn(binDir, "-pristine"),
		Duration: 20 * time.Second, StockBound: 3 * time.Minute, Env: []string{"GOMAXPROCS=8"},
	}
}

// shardedWorkspaces are the workspaces under root on each shard.
var shardedWorkspaces = [][]string{{"evidence-a"}, {"evidence-b", "evidence-c"}}

// RunSharded starts the carried topology, loads both shards and the cache
// server, stops it, then starts the stock one and loads shard 1 only (and
// the cache server), probing every workspace through the front-proxy.
func RunSharded(ctx context.Context, o ShardedOptions) (*report.Sharded, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	dir := o.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "kcp-carry-sharded-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	s := &report.Sharded{Started: time.Now(), LoadAvg: []string{loadAvg()}}
	s.Binaries = append(o.Patched.All(), o.Pristine.All()...)
	load := shardedload.SeedLoad(nil, o.Duration)
	s.Load = loadOf(load)

	var err error
	if s.Carried, err = runTopology(ctx, o, filepath.Join(dir, "carried"), o.Patched, false); err != nil {
		return nil, fmt.Errorf("carried topology: %w", err)
	}
	if s.Stock, err = runTopology(ctx, o, filepath.Join(dir, "stock"), o.Pristine, true); err != nil {
		return nil, fmt.Errorf("stock topology: %w", err)
	}
	s.Elapsed = time.Since(s.Started)
	s.LoadAvg = append(s.LoadAvg, loadAvg())
	return s, nil
}

func runTopology(ctx context.Context, o ShardedOptions, dir string, bins server.TopologyBinaries, stock bool) (report.ShardedRun, error) {
	var r report.ShardedRun
	what := map[bool]string{false: "carried", true: "stock"}[stock]
	topo, err := server.StartTopology(ctx, server.TopologyOptions{Binaries: bins, Dir: dir, Env: o.Env, Progress: o.Logf})
	if err != nil {
		return r, err
	}
	defer topo.Stop()
	r.StartedIn = topo.StartedIn
	ws, err := topo.PlaceAll(ctx, shardedWorkspaces)
	if err != nil {
		return r, err
	}
	plan := shardedload.Plan{Shards: map[int]hammer.Options{}, Probe: ws.Workspaces(), Linger: 10 * time.Second}
	cacheClusters := ws.All()
	if stock {
		// APIExports on shard 0 for the cache server: shard 1's die with it.
		cacheClusters = ws[0]
		seed := shardedload.SeedLoad(ws[0], o.Duration)
		seed.Resources, seed.SequentialProbe = []hammer.Resource{hammer.APIExports}, true
		if seed.Config, err = topo.ShardConfig(0); err != nil {
			return r, err
		}
		if rep, err := hammer.Run(ctx, seed); err != nil || rep.Death.Died || rep.Seed.Objects == 0 {
			return r, fmt.Errorf("seeding APIExports on shard root: %v", errors.Join(err, reportError(rep)))
		}
		l := shardedload.SeedLoad(ws[1], o.StockBound)
		plan.Shards[1] = l
	} else {
		for i, clusters := range ws {
			plan.Shards[i] = shardedload.SeedLoad(clusters, o.Duration)
		}
	}
	c := shardedload.CacheListers(cacheClusters, o.Duration)
	plan.Cache = &c
	o.Logf("evidence: sharded, %s: loading %d shard(s) and the cache server", what, len(plan.Shards))
	out, err := shardedload.Run(ctx, topo, plan)
	if err != nil {
		return r, err
	}
	for i, comp := range topo.Shards {
		r.Shards = append(r.Shards, shardOutcome("shard "+server.ShardName(i), out.Shards[i], comp))
	}
	r.Cache = shardOutcome("cache-server", out.Cache, topo.Cache)
	r.Probes = out.Probes
	for _, sh := range append(r.Shards, r.Cache) {
		o.Logf("evidence: sharded, %s: %s: %s, %.0f LISTs/s", what, sh.Name, sh.Verdict, sh.ListsPerSecond)
	}
	return r, nil
}

func reportError(rep *hammer.Report) error {
	if rep == nil || rep.Error == "" {
		return nil
	}
	return errors.New(rep.Error)
}

func shardOutcome(name string, rep *hammer.Report, c *server.Component) report.ShardedShard {
	s := report.ShardedShard{Name: name, Died: c.Died()}
	if f := c.Fatal(); f != nil {
		s.Fatal = f.Signature
	}
	if rep == nil {
		s.Verdict = "not loaded"
		if s.Died {
			s.Verdict = "died"
		}
		return s
	}
	s.Loaded, s.Verdict = true, rep.Verdict
	s.LoadElapsed, s.ListsPerSecond, s.Server5xx = rep.LoadElapsed, shardedload.ListsPerSecond(rep), rep.Server5xx()
	for _, c := range rep.Checks {
		if c.Ran {
			s.Checks = append(s.Checks, report.ShardedCheck{ID: c.ID, Name: c.Name, Checked: c.Checked, Violations: c.Violations, Values: c.Values})
		}
	}
	if rep.Death.Died {
		s.Died, s.TimeToDeath = true, rep.TimeToDeath
	}
	return s
}

// WriteSharded writes sharded.json and the chart into dir, each through a
// temporary file renamed into place.
func WriteSharded(dir string, s *report.Sharded) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	var svg bytes.Buffer
	if err := chart.WriteSharded(&svg, s); err != nil {
		return fmt.Errorf("the sharded chart: %w", err)
	}
	for name, b := range map[string][]byte{report.ShardedFile: append(data, '\n'), report.ShardedChartFile: svg.Bytes()} {
		if err := atomicfile.Write(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
