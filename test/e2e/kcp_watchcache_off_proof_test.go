package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
	"github.com/kcp-carry/kcp-carry/pkg/harness/kcpe2e"
	"github.com/kcp-carry/kcp-carry/pkg/harness/measure"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server/servertest"
	"github.com/kcp-carry/kcp-carry/pkg/util/atomicfile"
)

// EnvWatchCacheOffSoak bounds the proof's seed load (default 10m).
const EnvWatchCacheOffSoak = "KCP_CARRY_WATCH_CACHE_OFF_SOAK"

// rssInterval is how often the proof samples kcp's resident memory.
const rssInterval = 30 * time.Second

// TestRealKCPWatchCacheOffProof is the long proof of the operators'
// mitigation (make test-watch-cache-off; docs/watch-cache-off.md): stock kcp
// (bin/kcp-pristine, or KCP_BIN_DIR's) with --watch-cache=false
//
//   - seed-load: the suite's load for 10 minutes (KCP_CARRY_WATCH_CACHE_OFF_SOAK),
//     alive, checks (b) and (c) held, nothing stored, and kcp's RSS sampled
//     every 30 s: the second half of the run may not grow it by more than
//     15% of its value at half time;
//   - mixed-watchers: no single-cluster partial-metadata watcher receives
//     the key (each watch decodes its own events from etcd);
//   - scrub: one wildcard partial LIST per resource, then a merge PATCH of
//     every seeded object, stores nothing, also after a restart;
//   - kcp-e2e: kcp's conformance, garbagecollector and quota tests pass.
//
// Records in .build/watch-cache-off/<tree>/.
func TestRealKCPWatchCacheOffProof(t *testing.T) {
	src := kcpSource(t, "the proof runs kcp's own e2e tests from a kcp source tree: set "+EnvKCPSource)
	bin := kcpBinary(t, "pristine")
	records := filepath.Join(testfs.RepoRoot(t), ".build", "watch-cache-off", filepath.Base(filepath.Clean(src)))
	if err := os.MkdirAll(records, 0o755); err != nil {
		t.Fatal(err)
	}

	t.Run("seed-load", func(t *testing.T) {
		s, clusters := startKCPWithWorkspaces(t, bin, t.TempDir(), watchCacheOff)
		o := kcpLoadOptions(t, s, clusters)
		o.Duration = soakDuration(t)
		o.MaxRequests = 1 << 40
		o.Logf = nil
		samples := sampleRSS(t, s, o.Duration)
		rep := runHammer(t, o)
		series := samples()
		expectWatchCacheOffHeld(t, s, rep)
		expectNothingStored(t, s, o)
		writeRecord(t, records, "seed-load.json", map[string]any{
			"binary": bin, "args": []string{watchCacheOff}, "duration": o.Duration.String(),
			"requests": rep.Requests, "server5xx": rep.Server5xx(), "successfulWrites": rep.SuccessfulWrites,
			"checks": checkedCounts(rep), "rss": series,
		})
		expectFlatRSS(t, series)
	})

	t.Run("mixed-watchers", func(t *testing.T) {
		s := startKCP(t, bin, t.TempDir(), watchCacheOff)
		rep := runHammer(t, mixedWatchOptions(t, s.Config(), s.Done(), []string{"root"}, 2, 2, 10))
		if rep.Death.Died || s.Died() {
			t.Fatalf("stock kcp with %s died %s into the mixed-watch load: %s\n%s", watchCacheOff, rep.TimeToDeath, rep.Death.Evidence, s.Fatal())
		}
		c := mixedWatchResult(t, rep)
		if n := c.Values[`single-cluster: ""`]; n > 0 || c.Values[`single-cluster: <missing>`] == 0 {
			t.Errorf("single-cluster watch events: %d carry \"\", %d do not; want none and some (values %v)", n, c.Values[`single-cluster: <missing>`], c.Values)
		}
		if rep.SuccessfulWrites == 0 {
			t.Error("no write succeeded: the watches saw no MODIFIED events")
		}
		expectCleanOutput(t, s.Server)
		t.Logf("stock kcp with %s, mixed watchers: %d events, values %v (wildcard events of typed objects carry \"\" on the wire, never stored)", watchCacheOff, c.Checked, c.Values)
	})

	t.Run("scrub", func(t *testing.T) {
		rootDir := t.TempDir()
		s, clusters := startKCPWithWorkspaces(t, bin, rootDir, watchCacheOff)
		cfg := scrubServer{cfg: s.Config(), clusters: clusters, done: s.Done()}
		o := scrubHammerOptions(t, cfg)
		rep := runSequentialProbe(t, o)
		if b := rep.Result(checks.Pollution); b.Violated() || b.Checked == 0 {
			t.Errorf("check (b) after one wildcard partial LIST per resource: %+v", b)
		}
		ctx := contextFor(t, 5*time.Minute)
		for _, ref := range seededRefs(o) {
			dc := clusterDynamic(t, s.Config(), ref.cluster)
			patch := []byte(`{"metadata":{"labels":{"e2e.kcp-carry.io/touched":"yes"}}}`)
			if _, err := dc.Resource(gvrOf(ref.resource)).Namespace(ref.namespace).Patch(ctx, ref.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatalf("merge PATCH of %s: %v", ref, err)
			}
		}
		if got := storedPolluted(t, ctx, s.Config(), scrubResources(o)); len(got) > 0 {
			t.Errorf("after the probe and a PATCH of each of %d objects, %d objects carry the key in etcd: %v", len(seededRefs(o)), len(got), got)
		}
		if err := s.Stop(); err != nil {
			t.Fatalf("stopping kcp: %v", err)
		}
		s = startKCP(t, bin, rootDir, watchCacheOff)
		if got := storedPolluted(t, ctx, s.Config(), scrubResources(o)); len(got) > 0 {
			t.Errorf("after a restart, %d objects carry the key in etcd: %v", len(got), got)
		}
		t.Logf("stock kcp with %s: a wildcard partial LIST per resource and a PATCH of each of %d objects stored nothing, also after a restart", watchCacheOff, len(seededRefs(o)))
	})

	t.Run("kcp-e2e", func(t *testing.T) {
		bins := prepareKCPE2E(t, src)
		bins.start(kcpe2e.Subset...)
		ctx := contextFor(t, server.KCPReadyTimeout+time.Minute)
		s, err := kcpe2e.StartServer(ctx, kcpe2e.ServerOptions{Binary: bin, RootDir: t.TempDir(), Tree: bins.tree, Env: kcpEnv(t, bin), Args: []string{watchCacheOff}, Progress: t.Logf})
		if err != nil {
			t.Fatalf("starting kcp for kcp's e2e tests: %v", err)
		}
		servertest.StopKCPAtCleanup(t, s)
		logDir := filepath.Join(records, "kcp-e2e")
		for _, p := range kcpe2e.Subset {
			t.Run(p.Name(), func(t *testing.T) {
				pbin := bins.get(t, p)
				t.Parallel()
				res := runKCPTests(t, s, bins.tree, p, pbin, logDir, p.Name(), suiteTimeout)
				t.Logf("stock kcp with %s: %s", watchCacheOff, res.Summary())
				expectAllPassed(t, p, res)
			})
		}
	})
}

// soakDuration is the seed load's bound: EnvWatchCacheOffSoak or 10 min.
func soakDuration(t *testing.T) time.Duration {
	if v := os.Getenv(EnvWatchCacheOffSoak); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive Go duration", EnvWatchCacheOffSoak, v)
		}
		return d
	}
	return 10 * time.Minute
}

// rssSample is kcp's resident memory At into the load.
type rssSample struct {
	At     time.Duration `json:"at"`
	RSSMiB int64         `json:"rssMiB"`
}

// sampleRSS reads s's VmRSS every rssInterval for d; the returned function
// stops the sampling and returns the series.
func sampleRSS(t *testing.T, s *server.KCP, d time.Duration) func() []rssSample {
	var (
		mu     sync.Mutex
		series []rssSample
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	began := time.Now()
	go func() {
		defer close(done)
		tick := time.NewTicker(rssInterval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			u, err := server.ReadUsage(s.PID())
			if err != nil {
				return
			}
			mu.Lock()
			series = append(series, rssSample{At: time.Since(began).Round(time.Second), RSSMiB: u.RSSKiB / 1024})
			mu.Unlock()
			if time.Since(began) > d+time.Minute {
				return
			}
		}
	}()
	return func() []rssSample {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		t.Logf("kcp RSS every %s: %s", rssInterval, formatRSS(series))
		return series
	}
}

func formatRSS(series []rssSample) string {
	var b strings.Builder
	for i, s := range series {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d MiB", s.At, s.RSSMiB)
	}
	return b.String()
}

// expectFlatRSS fails when the second half of the series grew kcp's RSS by
// more than 15% of its value at half time (the first half holds the
// seeding and the caches filling).
func expectFlatRSS(t *testing.T, series []rssSample) {
	t.Helper()
	if len(series) < 4 {
		t.Errorf("only %d RSS samples: the load was too short to judge memory", len(series))
		return
	}
	mid, last := series[len(series)/2], series[len(series)-1]
	peak := mid.RSSMiB
	for _, s := range series[len(series)/2:] {
		peak = max(peak, s.RSSMiB)
	}
	growth := float64(peak-mid.RSSMiB) / float64(mid.RSSMiB)
	t.Logf("RSS at half time (%s) %d MiB, at the end (%s) %d MiB, second half's peak %d MiB: +%.1f%%", mid.At, mid.RSSMiB, last.At, last.RSSMiB, peak, 100*growth)
	if growth > 0.15 {
		t.Errorf("kcp's RSS grew %.1f%% in the second half of the load (from %d to %d MiB): not flat", 100*growth, mid.RSSMiB, peak)
	}
}

// writeRecord writes v as JSON into dir/name.
func writeRecord(t *testing.T, dir, name string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := atomicfile.Write(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("record: %s", path)
}

// EnvWatchCacheOffSizes lists the cost run's numbers of ClusterRoles
// (default 1000,10000).
const EnvWatchCacheOffSizes = "KCP_CARRY_WATCH_CACHE_OFF_SIZES"

// TestRealKCPWatchCacheOffCost measures what the mitigation costs (make
// test-watch-cache-off): stock kcp with --watch-cache=false and the carried
// kcp with its cache, both running, alternating rounds of one sequential
// client's wildcard partial-metadata LISTs, single-cluster LISTs, GETs and
// watch event delays at each size. A report, not a timed test: it fails
// only when a kcp dies or a kind of request got no answer. The table is in
// .build/watch-cache-off/<tree>/cost.md for docs/watch-cache-off.md.
func TestRealKCPWatchCacheOffCost(t *testing.T) {
	src := kcpSource(t, "the cost run records its tree: set "+EnvKCPSource)
	o := measure.DefaultWatchCacheOffOptions()
	o.StockBinary, o.CarriedBinary = kcpBinary(t, "pristine"), kcpBinary(t, "patched")
	o.Logf = t.Logf
	if v := os.Getenv(EnvWatchCacheOffSizes); v != "" {
		o.Sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("%s=%q: want numbers separated by commas", EnvWatchCacheOffSizes, v)
			}
			o.Sizes = append(o.Sizes, n)
		}
	}
	o.ReadyTimeout = 10 * time.Minute
	costs, err := measure.WatchCacheOff(contextFor(t, 3*time.Hour), o)
	if err != nil {
		// The sizes measured before the error are still a record.
		defer t.Fatal(err)
	}
	for _, c := range costs {
		for variant, kinds := range c.Kinds {
			for kind, k := range kinds {
				if k.Requests == 0 {
					t.Errorf("%d objects, %s: no %s answered (%d failed)", c.Objects, variant, kind, k.Failed)
				}
			}
		}
	}
	table := measure.WatchCacheOffTable(costs)
	t.Logf("the mitigation's cost, off = stock kcp with %s, on = the carried kcp with its watch cache:\n%s", watchCacheOff, table)
	records := filepath.Join(testfs.RepoRoot(t), ".build", "watch-cache-off", filepath.Base(filepath.Clean(src)))
	if err := os.MkdirAll(records, 0o755); err != nil {
		t.Fatal(err)
	}
	writeRecord(t, records, "cost.json", map[string]any{"options": o, "costs": costs})
	if err := atomicfile.Write(filepath.Join(records, "cost.md"), []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
}
