// Package testreport builds small, consistent report documents (evidence/duel.json) for tests.
package testreport

import (
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
)

// Run is a run of variant with a steady rate of lists per second for
// elapsed, with a timeline; died makes the shard die at the end of it.
func Run(variant string, perSecond int64, elapsed time.Duration, died bool) report.Run {
	r := report.Run{Variant: variant, LoadElapsed: elapsed, Alive: elapsed, Verdict: "clean"}
	whole := int(elapsed / time.Second)
	for i := 0; i <= whole; i++ {
		span := min(time.Second, elapsed-time.Duration(i)*time.Second)
		if span <= 0 {
			break
		}
		n := int64(float64(perSecond) * span.Seconds())
		r.Timeline = append(r.Timeline, report.Second{Second: i, Span: span, Lists: n})
		r.Lists += n
	}
	r.Requests = r.Lists + r.Lists/10 // watches and writes besides
	if died {
		// The hammer notices a moment later.
		r.LoadElapsed += 100 * time.Millisecond
		r.Died, r.TimeToDeath, r.DeathPhase, r.Verdict = true, elapsed, "load", "server died"
		r.Failed = 12
		r.Requests += r.Failed
		r.Timeline[len(r.Timeline)-1].Errors = r.Failed
		r.Fatal = &report.Fatal{
			Signature: "concurrent map writes",
			Frames: []string{
				"internal/runtime/maps.fatal (/usr/local/go/src/runtime/panic.go:1058)",
				"k8s.io/apiserver/pkg/endpoints/handlers.setKCPOriginalAPIVersionAnnotation (response_kcp.go:60)",
			},
			Where: "k8s.io/apiserver/pkg/endpoints/handlers.setKCPOriginalAPIVersionAnnotation",
		}
	}
	return r
}

// Report is a duel in which the pristine shard dies 3.5 s into the load
// while the patched one serves 20 s, a single lister in two rounds, and
// three scaling steps of which the pristine shard survives the first.
func Report() *report.Report {
	r := &report.Report{
		Schema:  report.Schema,
		Started: time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC),
		Elapsed: 3 * time.Minute,
		Setup: report.Setup{
			Commit: "0123456789ab", Note: "Synthetic.", GoVersion: "go1.26.8", GOOS: "linux", GOARCH: "amd64", CPUs: 2,
			LoadAvgBefore: "0.50 0.40 0.30", LoadAvgAfter: "1.90 0.80 0.40",
			Shards: []report.Shard{
				{Variant: report.Pristine, Build: "GOWORK=off go build ./cmd/testshard", Binary: "bin/shards/testshard-pristine"},
				{Variant: report.Patched, Build: "go build ./cmd/testshard", Binary: "bin/shards/testshard-patched"},
			},
			Resources: []string{"clusterroles", "configmaps"}, Clusters: []string{"a", "b", "c"}, Objects: 50, Annotations: 16,
		},
		Duel: report.Duel{
			Load: report.Load{
				Listers:  []string{"kcp:0", "v1beta1:", "v1:0", "v1beta1:0:paged", "v1:", "v1beta1:0", "v1::paged", "kcp:"},
				Watchers: 2, Writers: 4, WriteMode: "mixed", Bound: 20 * time.Second, Budget: 200000,
			},
			Pristine: Run(report.Pristine, 800, 3500*time.Millisecond, true),
			Patched:  Run(report.Patched, 780, 20*time.Second, false),
		},
		SingleLister: report.SingleLister{
			Load: report.Load{Listers: []string{"v1:0"}, Bound: 5 * time.Second, Budget: 100000},
			Rounds: []report.Round{
				{Pristine: Run(report.Pristine, 300, 5*time.Second, false), Patched: Run(report.Patched, 294, 5*time.Second, false)},
				{Pristine: Run(report.Pristine, 310, 5*time.Second, false), Patched: Run(report.Patched, 300, 5*time.Second, false)},
			},
		},
		Scaling: report.Scaling{Load: report.Load{Listers: []string{"v1:0"}, Bound: 5 * time.Second, Budget: 100000}},
		Notes:   []string{"A synthetic report."},
	}
	for i := range r.SingleLister.Rounds {
		rd := &r.SingleLister.Rounds[i]
		rd.Pristine.Timeline, rd.Patched.Timeline = nil, nil
	}
	for i, n := range []int{1, 2, 4} {
		st := report.Step{Listers: n,
			Patched:  Run(report.Patched, int64(300*n), 5*time.Second, false),
			Pristine: Run(report.Pristine, int64(300*n), time.Duration(5-2*i)*time.Second, i > 0),
		}
		st.Patched.Timeline, st.Pristine.Timeline = nil, nil
		r.Scaling.Steps = append(r.Scaling.Steps, st)
	}
	return r
}

// StockSharded is a sharded run where stock shard 1 died 3 s into its load:
// its workspace answered 2 s, then failed; shard 0's answered throughout.
func StockSharded() *report.Sharded {
	sec := func(ok, failed int) report.ProbeSecond { return report.ProbeSecond{OK: ok, Failed: failed} }
	return &report.Sharded{
		Carried: report.ShardedRun{
			Shards: []report.ShardedShard{{Name: "shard root", Loaded: true, ListsPerSecond: 40, Verdict: "clean"}, {Name: "shard shard-1", Loaded: true, ListsPerSecond: 38, Verdict: "clean",
				Checks: []report.ShardedCheck{{ID: "a", Checked: 30, Values: map[string]int64{`<missing>`: 20, `"apis.kcp.io/v1alpha2"`: 10}}, {ID: "b", Checked: 300}}}},
			Cache:  report.ShardedShard{Name: "cache-server", Loaded: true, ListsPerSecond: 9, Verdict: "clean"},
			Probes: []report.Probe{{Shard: 0, Cluster: "root", OK: 8}, {Shard: 1, Cluster: "c1", OK: 8}},
		},
		Stock: report.ShardedRun{
			Shards: []report.ShardedShard{{Name: "shard root"}, {Name: "shard shard-1", Loaded: true, Died: true, TimeToDeath: 3 * time.Second, Fatal: "concurrent map writes"}},
			Cache:  report.ShardedShard{Name: "cache-server", Loaded: true, Verdict: "clean"},
			Probes: []report.Probe{
				{Shard: 0, Cluster: "root", OK: 8, Seconds: []report.ProbeSecond{sec(2, 0), sec(2, 0), sec(2, 0), sec(2, 0)}},
				{Shard: 1, Cluster: "c2", OK: 4, Failed: 4, LastFailure: "502 Bad Gateway: connection refused",
					Seconds: []report.ProbeSecond{sec(2, 0), sec(2, 0), sec(0, 2), sec(0, 2)}},
			},
		},
	}
}
