package sharded

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcpbuild"
	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server/servertest"
	"github.com/kcp-carry/kcp-carry/pkg/harness/shardedload"
)

const (
	envKCPSource    = "KCP_SOURCE"
	envReduced      = "KCP_CARRY_SHARDED_REDUCED"
	envLoadDuration = "KCP_CARRY_SHARDED_LOAD_DURATION"

	// suiteObjects is how many objects of each resource each shard's load
	// seeds in each of its logical clusters.
	suiteObjects = 50
	// pristineDeathBound is the least bound of the load that must kill the
	// stock shard. test/e2e's 90 s for one kcp was outlived here once in
	// three runs (bin/evidence, a quiet machine, 41 LISTs/s), so twice that.
	pristineDeathBound = 3 * time.Minute
	// deathGrace is how long a shard the hammer saw die may take to exit.
	deathGrace = 30 * time.Second
	// linger keeps the front-proxy probes going after the stock load, so
	// they show what it answers for the dead shard's workspaces.
	linger = 10 * time.Second
)

// The workspaces each shard gets under root; shard 0 also holds root.
var shardWorkspaces = [][]string{{"sharded-a"}, {"sharded-b", "sharded-c"}}

// serverEnv is every server's environment, stock and carried alike (as in
// test/e2e): more Ps than cores, so the stock shard's concurrent map write
// is caught within seconds on a busy machine.
var serverEnv = []string{"GOMAXPROCS=8"}

func reduced() bool { return os.Getenv(envReduced) == "1" }

func loadDuration(t *testing.T) time.Duration {
	if v := os.Getenv(envLoadDuration); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive Go duration", envLoadDuration, v)
		}
		return d
	}
	if reduced() {
		return 10 * time.Second
	}
	return 20 * time.Second
}

// binaries returns the four servers of a variant ("patched": bin/<server>,
// "pristine": bin/<server>-pristine) after checking from each one's build
// info that it is that variant.
func binaries(t *testing.T, variant string) server.TopologyBinaries {
	t.Helper()
	if testing.Short() {
		t.Skip("live sharded kcp: run without -short")
	}
	root := testfs.RepoRoot(t)
	suffix := map[string]string{"patched": "", "pristine": "-pristine"}[variant]
	bins := server.TopologyBinariesIn(filepath.Join(root, "bin"), suffix)
	c, err := carryset.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	carried := c.Paths()
	for _, bin := range bins.All() {
		if _, err := os.Stat(bin); err != nil {
			if src := os.Getenv(envKCPSource); src != "" {
				t.Fatalf("%s=%s is set but %s is missing: run `make sharded KCP_SOURCE=%s`", envKCPSource, src, bin, src)
			}
			t.Skipf("sharded kcp: set %s=<kcp v0.32.3 source tree> and run `make test-sharded` (builds %s)", envKCPSource, strings.Join(server.TopologyCommands, ", "))
		}
		got, err := kcpbuild.Variant(bin, carried)
		if err != nil {
			t.Fatal(err)
		}
		if got != variant {
			t.Fatalf("%s is a %s build (from its build info), want %s: rebuild with `make sharded`", bin, got, variant)
		}
	}
	return bins
}

// startTopology starts the sharded kcp and stops it at cleanup, logging the
// output of every server when the test failed. The carried servers run with
// the informers' and the watch cache's mutation detectors on
// (KUBE_CACHE_MUTATION_DETECTOR, KUBE_WATCHCACHE_MUTATION_DETECTOR): a report
// in any server's output fails the test.
func startTopology(t *testing.T, bins server.TopologyBinaries, variant string) *server.Topology {
	t.Helper()
	env := serverEnv
	if variant == "patched" {
		env = append(slices.Clone(serverEnv), server.CacheMutationDetectorEnv(true, true)...)
	}
	return servertest.StartTopology(t, server.TopologyOptions{Binaries: bins, Dir: t.TempDir(), Env: env})
}

// expectLoopbackOnly asserts from the kernel's socket tables that every
// server listens on 127.0.0.1 only, its serving port among them.
func expectLoopbackOnly(t *testing.T, topo *server.Topology) {
	t.Helper()
	loopback := netip.MustParseAddr("127.0.0.1")
	for _, c := range topo.Components() {
		addrs, err := server.Listeners(c.PID())
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		serving := netip.MustParseAddrPort(strings.TrimPrefix(c.URL(), "https://"))
		if !slices.Contains(addrs, serving) {
			t.Errorf("%s (pid %d) does not listen on %s: it listens on %v", c.Name, c.PID(), serving, addrs)
		}
		for _, a := range addrs {
			if a.Addr() != loopback {
				t.Errorf("%s (pid %d) listens on %s, not 127.0.0.1", c.Name, c.PID(), a)
			}
		}
		t.Logf("%s listens on %v", c.Name, addrs)
	}
}

func placeWorkspaces(t *testing.T, topo *server.Topology) server.Placement {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ws, err := topo.PlaceAll(ctx, shardWorkspaces)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func shardLoad(t *testing.T, clusters []string) hammer.Options {
	o := shardedload.SeedLoad(clusters, loadDuration(t))
	o.Logf = t.Logf
	return o
}

func cacheLoad(t *testing.T, clusters []string) *hammer.Options {
	o := shardedload.CacheListers(clusters, loadDuration(t))
	o.Logf = t.Logf
	return &o
}

func runPlan(t *testing.T, topo *server.Topology, plan shardedload.Plan) *shardedload.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	out, err := shardedload.Run(ctx, topo, plan)
	if err != nil {
		t.Fatal(err)
	}
	for i, rep := range out.Shards {
		logReport(t, "shard "+server.ShardName(i), rep)
	}
	if out.Cache != nil {
		logReport(t, "cache server", out.Cache)
	}
	return out
}

func logReport(t *testing.T, what string, rep *hammer.Report) {
	var b bytes.Buffer
	_ = rep.WriteText(&b)
	t.Logf("hammer report of %s:\n%s", what, b.String())
}

var allChecks = []string{checks.APIVersion, checks.Pollution, checks.LostWrites, checks.MixedWatchers}

// expectChecksHeld fails unless each named check ran on more than zero items
// without a violation.
func expectChecksHeld(t *testing.T, what string, rep *hammer.Report, names ...string) {
	t.Helper()
	for _, name := range names {
		c := rep.Result(name)
		if !c.Ran || c.Checked == 0 {
			t.Errorf("%s: check %s did not run or checked nothing: %s", what, c.Title(), c.Note)
		} else if c.Violations > 0 {
			t.Errorf("%s: check %s: %d of %d violated, e.g. %v", what, c.Title(), c.Violations, c.Checked, c.Samples)
		}
	}
}

// expectAlive fails when a server died or wrote a fatal error or race.
func expectAlive(t *testing.T, cs ...*server.Component) {
	t.Helper()
	for _, c := range cs {
		if c.Died() {
			t.Errorf("%s died: %v\n%s", c.Name, c.ExitError(), c.Fatal())
		} else if f := c.Fatal(); f != nil {
			t.Errorf("%s's output has %s:\n%s", c.Name, f.Line, f)
		}
	}
}

// TestShardedKCPPatched: kcp v0.32.3's sharded servers built with the carry
// survive the seed load on both shards' own endpoints at once and a wildcard
// partial-metadata load on the cache server; every check holds on each shard
// and on the cache server, every workspace keeps answering through the
// front-proxy meanwhile, and afterwards no full-object read through the
// front-proxy shows the annotation.
func TestShardedKCPPatched(t *testing.T) {
	bins := binaries(t, "patched")
	began := time.Now()
	topo := startTopology(t, bins, "patched")
	runCarried(t, topo, began)
}

// runAllShards places the workspaces and runs the seed load on every shard
// at once, with the cache server's load and the front-proxy probes.
func runAllShards(t *testing.T, topo *server.Topology) (server.Placement, *shardedload.Outcome) {
	t.Helper()
	expectLoopbackOnly(t, topo)
	ws := placeWorkspaces(t, topo)
	plan := shardedload.Plan{Shards: map[int]hammer.Options{}, Probe: ws.Workspaces(), Cache: cacheLoad(t, ws.All())}
	for i, clusters := range ws {
		plan.Shards[i] = shardLoad(t, clusters)
	}
	return ws, runPlan(t, topo, plan)
}

// runCarried is TestShardedKCPPatched's load and verdict on a started
// carried topology (also its race builds', TestShardedKCPRaceCarried).
func runCarried(t *testing.T, topo *server.Topology, began time.Time) {
	t.Helper()
	ws, out := runAllShards(t, topo)

	for i, rep := range out.Shards {
		what := "shard " + server.ShardName(i)
		if rep.Death.Died {
			t.Errorf("%s died %s into the load: %s\n%s", what, rep.TimeToDeath, rep.Death.Evidence, topo.Shards[i].Fatal())
			continue
		}
		if n := rep.Server5xx(); n > 0 {
			t.Errorf("%s answered %d requests with 5xx", what, n)
		}
		expectChecksHeld(t, what, rep, allChecks...)
		if want := len(rep.Clusters) * len(rep.Resources) * suiteObjects; rep.Seed.Objects != want || rep.SuccessfulWrites == 0 || rep.PartialItems == 0 || rep.WatchEvents == 0 {
			t.Errorf("%s: the load did not run in full: %d objects (want %d), %d writes, %d partial items, %d watch events",
				what, rep.Seed.Objects, want, rep.SuccessfulWrites, rep.PartialItems, rep.WatchEvents)
		}
		t.Logf("%s: %d requests in %s, %.0f LISTs/s, %s", what, rep.Requests, rep.LoadElapsed.Round(time.Millisecond), shardedload.ListsPerSecond(rep), checkedCounts(rep))
	}
	expectCacheServer(t, topo, out.Cache)
	expectAllAnswered(t, out.Probes)
	expectNoAnnotationThroughFrontProxy(t, topo, ws)
	expectAlive(t, topo.Components()...)
	t.Logf("carried sharded run: %s in all (start %s, load and probes %s)", time.Since(began).Round(time.Second), topo.StartedIn.Round(time.Second), out.Elapsed.Round(time.Second))
}

// TestShardedKCPPristine is the positive control in the same topology with
// stock servers: the seed load on shard 1 alone kills shard 1 with a
// concurrent map error; shard 0, the cache server and the front-proxy stay
// up, shard 0's workspaces keep answering through the front-proxy and shard
// 1's get an error there. The cache server takes the same wildcard
// partial-metadata load as with the carry and is not exposed.
func TestShardedKCPPristine(t *testing.T) {
	if reduced() {
		t.Skipf("%s=1: the reduced form runs the carried topology only", envReduced)
	}
	bins := binaries(t, "pristine")
	began := time.Now()
	topo := startTopology(t, bins, "pristine")
	expectLoopbackOnly(t, topo)
	ws := placeWorkspaces(t, topo)

	// APIExports (custom resources, which the stock fork serves without
	// the race) on shard 0 for the cache server to replicate and serve:
	// shard 1's will not outlive its load.
	seed := shardLoad(t, ws[0])
	seed.Resources = []hammer.Resource{hammer.APIExports}
	seed.SequentialProbe = true
	cfg, err := topo.ShardConfig(0)
	if err != nil {
		t.Fatal(err)
	}
	seed.Config = cfg
	if rep, err := hammer.Run(context.Background(), seed); err != nil || rep.Death.Died || rep.Seed.Objects == 0 {
		t.Fatalf("seeding APIExports on shard root: %v %+v", err, rep)
	}

	load := shardLoad(t, ws[1])
	load.Duration = max(load.Duration, pristineDeathBound)
	out := runPlan(t, topo, shardedload.Plan{
		Shards: map[int]hammer.Options{1: load},
		Cache:  cacheLoad(t, ws[0]),
		Probe:  ws.Workspaces(),
		Linger: linger,
	})

	rep := out.Shards[1]
	loaded := topo.Shards[1]
	if !rep.Death.Died {
		t.Fatalf("the stock shard %s survived %s of load: the positive control lost its teeth", server.ShardName(1), rep.LoadElapsed)
	}
	select {
	case <-loaded.Done():
	case <-time.After(deathGrace):
		t.Fatalf("the hammer reported shard %s dead but its process (pid %d) still runs", server.ShardName(1), loaded.PID())
	}
	if f := loaded.Fatal(); !f.ConcurrentMap() || !(f.HasFrame("setKCPOriginalAPIVersionAnnotation") || f.HasFrame("encoding/json")) {
		t.Errorf("shard %s died, but not of a concurrent map failure in setKCPOriginalAPIVersionAnnotation or encoding/json:\n%s", server.ShardName(1), f)
	} else {
		t.Logf("stock shard %s died %s into the load: %s", server.ShardName(1), rep.TimeToDeath.Round(time.Millisecond), f)
	}
	expectAlive(t, topo.Cache, topo.Shards[0], topo.FrontProxy)
	for _, vw := range topo.VirtualWorkspaces {
		t.Logf("%s: alive %t", vw.Name, !vw.Died())
	}
	expectCacheServer(t, topo, out.Cache)

	for _, p := range out.Probes {
		what := fmt.Sprintf("workspace %s on shard %s through the front-proxy", p.Cluster, server.ShardName(p.Shard))
		t.Logf("%s: %d answered, %d failed (%.0f%%); first failure %s in: %s", what, p.OK, p.Failed, 100*p.AnswerRate(), p.FirstFailureAt.Round(time.Millisecond), p.FirstFailure)
		switch {
		case p.OK == 0:
			t.Errorf("%s never answered", what)
		case p.Shard == 0 && p.Failed > 0:
			t.Errorf("%s failed %d times while shard %s died, first at %s: %s", what, p.Failed, server.ShardName(1), p.FirstFailureAt, p.FirstFailure)
		case p.Shard == 1 && (p.LastStatus < 500 || p.LastFailure == ""):
			t.Errorf("%s: after the shard died the front-proxy answered %d (%q), want a 5xx error", what, p.LastStatus, p.LastFailure)
		case p.Shard == 1:
			t.Logf("%s after the shard died: %s", what, p.LastFailure)
		}
	}
	t.Logf("stock sharded run: %s in all (start %s)", time.Since(began).Round(time.Second), topo.StartedIn.Round(time.Second))
}

// expectCacheServer asserts the cache server took the wildcard
// partial-metadata load alive, with every partial item carrying its own
// apiVersion (check (a): the cache server serves only custom resources).
func expectCacheServer(t *testing.T, topo *server.Topology, rep *hammer.Report) {
	t.Helper()
	if rep == nil {
		t.Fatal("no report of the cache server's load")
	}
	if rep.Death.Died || topo.Cache.Died() {
		t.Fatalf("the cache server died %s into the load: %s\n%s", rep.TimeToDeath, rep.Death.Evidence, topo.Cache.Fatal())
	}
	if rep.Error != "" {
		t.Errorf("the cache server's load: %s", rep.Error)
	}
	if n := rep.Server5xx(); n > 0 {
		t.Errorf("the cache server answered %d requests with 5xx", n)
	}
	expectChecksHeld(t, "cache server", rep, checks.APIVersion)
	t.Logf("cache server: %d requests in %s, %.0f LISTs/s, %d partial items checked", rep.Requests, rep.LoadElapsed.Round(time.Millisecond),
		shardedload.ListsPerSecond(rep), rep.Result(checks.APIVersion).Checked)
}

// expectAllAnswered asserts every workspace answered every probe through
// the front-proxy.
func expectAllAnswered(t *testing.T, probes []report.Probe) {
	t.Helper()
	for _, p := range probes {
		what := fmt.Sprintf("workspace %s on shard %s through the front-proxy", p.Cluster, server.ShardName(p.Shard))
		switch {
		case p.OK == 0:
			t.Errorf("%s never answered", what)
		case p.Failed > 0:
			t.Errorf("%s failed %d of %d probes, first at %s: %s", what, p.Failed, p.OK+p.Failed, p.FirstFailureAt, p.FirstFailure)
		default:
			t.Logf("%s: answered all %d probes", what, p.OK)
		}
	}
}

var gvrs = []schema.GroupVersionResource{
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	{Version: "v1", Resource: "configmaps"},
	{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apiexports"},
}

// expectNoAnnotationThroughFrontProxy LISTs every seeded object through the
// front-proxy, from the watch cache (resourceVersion 0) and from etcd
// (resourceVersion ""), as full objects: none may carry the annotation.
func expectNoAnnotationThroughFrontProxy(t *testing.T, topo *server.Topology, ws server.Placement) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var read, annotated int
	for _, clusters := range ws {
		for _, cluster := range clusters {
			cfg := topo.FrontProxyConfig()
			cfg.Host += "/clusters/" + cluster
			dc, err := dynamic.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, gvr := range gvrs {
				for _, rv := range []string{"0", ""} {
					list, err := dc.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: hammer.OwnedLabel, ResourceVersion: rv})
					if err != nil {
						t.Fatalf("LIST %s in %s (resourceVersion %q) through the front-proxy: %v", gvr.Resource, cluster, rv, err)
					}
					if len(list.Items) != suiteObjects {
						t.Errorf("LIST %s in %s (resourceVersion %q) through the front-proxy: %d seeded objects, want %d", gvr.Resource, cluster, rv, len(list.Items), suiteObjects)
					}
					for _, item := range list.Items {
						read++
						if v, ok := item.GetAnnotations()[hammer.OriginalAPIVersionAnnotation]; ok {
							annotated++
							if annotated <= 5 {
								t.Errorf("%s %s|%s (resourceVersion %q) through the front-proxy carries %s=%q", gvr.Resource, cluster, item.GetName(), rv, hammer.OriginalAPIVersionAnnotation, v)
							}
						}
					}
				}
			}
		}
	}
	if annotated > 0 {
		t.Errorf("%d of %d full objects read through the front-proxy carry %s", annotated, read, hammer.OriginalAPIVersionAnnotation)
	} else {
		t.Logf("no annotation on %d full objects read through the front-proxy (watch cache and etcd)", read)
	}
}

func checkedCounts(rep *hammer.Report) string {
	var parts []string
	for _, name := range allChecks {
		c := rep.Result(name)
		parts = append(parts, fmt.Sprintf("%s %d", c.ID, c.Checked))
	}
	return "checked " + strings.Join(parts, ", ")
}
