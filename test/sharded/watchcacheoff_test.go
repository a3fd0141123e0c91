package sharded

import (
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server/servertest"
	"github.com/kcp-carry/kcp-carry/pkg/harness/shardedload"
)

// TestShardedWatchCacheOff is the operators' mitigation in the sharded
// topology (make test-watch-cache-off, not make test): the stock servers,
// every shard started with --watch-cache=false, under the carried run's
// load on both shards at once. Every shard, the cache server, the virtual
// workspaces and the front-proxy stay up; checks (b) and (c) hold on each
// shard; every workspace answers every probe through the front-proxy; and
// no full object read through it carries the key. TestShardedKCPPristine,
// the same servers with their watch cache, is its control: one shard's load
// kills that shard.
func TestShardedWatchCacheOff(t *testing.T) {
	bins := binaries(t, "pristine")
	began := time.Now()
	topo := servertest.StartTopology(t, server.TopologyOptions{Binaries: bins, Dir: t.TempDir(), Env: serverEnv, ShardArgs: []string{"--watch-cache=false"}})
	ws, out := runAllShards(t, topo)
	for i, rep := range out.Shards {
		what := "shard " + server.ShardName(i) + " with --watch-cache=false"
		if rep.Death.Died {
			t.Errorf("%s died %s into the load: %s\n%s", what, rep.TimeToDeath, rep.Death.Evidence, topo.Shards[i].Fatal())
			continue
		}
		if n := rep.Server5xx(); n > 0 {
			t.Errorf("%s answered %d requests with 5xx", what, n)
		}
		// Check (a) does not hold on the stock fork: the partial items of
		// typed objects say "" in the answer (never stored, check (b)).
		expectChecksHeld(t, what, rep, checks.Pollution, checks.LostWrites)
		if rep.SuccessfulWrites == 0 || rep.PartialItems == 0 {
			t.Errorf("%s: the load did not run in full: %d writes, %d partial items", what, rep.SuccessfulWrites, rep.PartialItems)
		}
		t.Logf("%s: %d requests in %s, %.0f LISTs/s, %s; partial items' values %v", what, rep.Requests, rep.LoadElapsed.Round(time.Millisecond),
			shardedload.ListsPerSecond(rep), checkedCounts(rep), rep.Result(checks.APIVersion).Values)
	}
	expectCacheServer(t, topo, out.Cache)
	expectAllAnswered(t, out.Probes)
	expectNoAnnotationThroughFrontProxy(t, topo, ws)
	expectAlive(t, topo.Components()...)
	t.Logf("stock sharded run with --watch-cache=false: %s in all (start %s, load and probes %s)", time.Since(began).Round(time.Second), topo.StartedIn.Round(time.Second), out.Elapsed.Round(time.Second))
}
