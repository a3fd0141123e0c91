// Package shardedload runs load on a sharded kcp (server.StartTopology):
// hammer loads on shards' own endpoints and on the cache server, and probes
// of workspaces through the front-proxy meanwhile.
package shardedload

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// CachePrefix is where kcp's clients reach the cache server's data for every
// shard: /services/cache/shards/*/clusters/<cluster>/... (kcp
// pkg/cache/server/handler.go, WithServiceScope and WithShardScope).
const CachePrefix = "/services/cache/shards/*"

// Plan is one load on the topology: hammer runs at once against some
// shards' own endpoints (shard-base) and the cache server, and probes of
// workspaces through the front-proxy meanwhile.
type Plan struct {
	// Shards maps a shard index to its hammer load; Config and ServerExited
	// are filled in (the shard admin at the shard's URL).
	Shards map[int]hammer.Options
	// Cache, when set, is a hammer load against the cache server under
	// CachePrefix; Config and ServerExited are filled in.
	Cache *hammer.Options
	// Probe are the workspaces to probe through the front-proxy every
	// ProbeInterval from before the load until Linger after it.
	Probe         []server.Workspace
	ProbeInterval time.Duration
	// Linger keeps the probes going after the load ends, so they show what
	// the front-proxy answers once a shard is gone.
	Linger time.Duration
}

// Outcome is what a Plan produced.
type Outcome struct {
	// Shards are the hammer reports by shard index.
	Shards map[int]*hammer.Report
	Cache  *hammer.Report
	Probes []report.Probe
	// Elapsed is from the start of the probes to their end.
	Elapsed time.Duration
}

// CacheLoad is a wildcard partial-metadata load on the cache server over
// objects the shards replicate there (APIExports seeded in clusters by the
// shards' loads): listers and watchers only, no seeding, no writes, and no
// after-load reads, which need writes of their own.
func CacheLoad(base hammer.Options, clusters []string) hammer.Options {
	o := base
	o.Resources = []hammer.Resource{hammer.APIExports}
	o.Clusters = clusters
	o.NoSeed, o.NoAfterChecks = true, true
	o.Writers, o.MixedWatchers = 0, 0
	// Replication to the cache server follows the shards' seeding.
	o.SyncTimeout = max(o.SyncTimeout, 2*time.Minute)
	return o
}

// Run runs the plan on t: every hammer at once, the probes around them.
func Run(ctx context.Context, t *server.Topology, p Plan) (*Outcome, error) {
	if p.ProbeInterval <= 0 {
		p.ProbeInterval = 500 * time.Millisecond
	}
	type job struct {
		shard int // -1: the cache server
		opts  hammer.Options
	}
	var jobs []job
	for i, o := range p.Shards {
		if i < 0 || i >= len(t.Shards) {
			return nil, fmt.Errorf("plan: no shard %d (the topology has %d)", i, len(t.Shards))
		}
		cfg, err := t.ShardConfig(i)
		if err != nil {
			return nil, err
		}
		o.Config, o.ServerExited = cfg, t.Shards[i].Done()
		jobs = append(jobs, job{shard: i, opts: o})
	}
	if p.Cache != nil {
		o := *p.Cache
		o.Config = t.CacheConfig()
		o.Config.Host += CachePrefix
		o.ServerExited = t.Cache.Done()
		jobs = append(jobs, job{shard: -1, opts: o})
	}
	for _, j := range jobs {
		if err := j.opts.Validate(); err != nil {
			return nil, fmt.Errorf("plan for %s: %w", jobName(j.shard), err)
		}
	}

	began := time.Now()
	var prober *Prober
	if len(p.Probe) > 0 {
		var err error
		if prober, err = StartProber(ctx, t, p.Probe, p.ProbeInterval); err != nil {
			return nil, err
		}
	}
	out := &Outcome{Shards: map[int]*hammer.Report{}}
	var (
		mu   sync.Mutex
		errs []string
		wg   sync.WaitGroup
	)
	for _, j := range jobs {
		wg.Go(func() {
			rep, err := hammer.Run(ctx, j.opts)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, fmt.Sprintf("%s: %v", jobName(j.shard), err))
			case j.shard < 0:
				out.Cache = rep
			default:
				out.Shards[j.shard] = rep
			}
		})
	}
	wg.Wait()
	if prober != nil {
		select {
		case <-time.After(p.Linger):
		case <-ctx.Done():
		}
		out.Probes = prober.Stop()
	}
	out.Elapsed = time.Since(began)
	if len(errs) > 0 {
		return out, fmt.Errorf("hammer: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

func jobName(shard int) string {
	if shard < 0 {
		return "cache-server"
	}
	return "shard " + server.ShardName(shard)
}

// ListsPerSecond is a report's successful LISTs over its load's duration.
func ListsPerSecond(rep *hammer.Report) float64 {
	if rep == nil || rep.LoadElapsed <= 0 {
		return 0
	}
	return float64(rep.Timeline.Lists()) / rep.LoadElapsed.Seconds()
}

// SeedLoad is the seed load on one shard (test/e2e's, plus check (d)): 8
// listers, 2 wildcard watchers, one group of mixed watchers and 4 writers
// over 50 ClusterRoles, ConfigMaps and APIExports (a custom resource) in each
// of clusters, bounded by d.
func SeedLoad(clusters []string, d time.Duration) hammer.Options {
	o := hammer.DefaultOptions()
	o.Resources = []hammer.Resource{hammer.ClusterRoles, hammer.ConfigMaps, hammer.APIExports}
	o.Clusters = clusters
	o.Objects = 50
	o.Listers, o.Watchers, o.Writers, o.MixedWatchers = 8, 2, 4, 1
	o.Duration = d
	return o
}

// CacheListers is CacheLoad with 2 listers (meta.k8s.io v1 from the watch
// cache, v1beta1 from etcd) and a watcher, bounded by d. kcp's own metadata
// client is left out: it picks PartialObjectMetadata or ...List from the
// path after /clusters/<name> only (kcp pkg/metadata/dynamic.go,
// partialType), so under /services/cache/shards/* it asks for a LIST's
// answer as PartialObjectMetadata, which the cache server refuses with a
// 4xx ("you requested PartialObjectMetadata, but the requested object is a
// list").
func CacheListers(clusters []string, d time.Duration) hammer.Options {
	o := hammer.DefaultOptions()
	o.Objects = 50
	o.Listers, o.Watchers = 2, 1
	o.ListerShapes = []requestshape.Shape{mustShape("v1:0"), mustShape("v1beta1:")}
	o.Duration = d
	return CacheLoad(o, clusters)
}

func mustShape(name string) requestshape.Shape {
	s, err := hammer.ParseListerShape(name)
	if err != nil {
		panic(err)
	}
	return s
}
