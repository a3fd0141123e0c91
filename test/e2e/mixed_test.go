package e2e

import (
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server/servertest"
)

// mixedWatchOptions opens wildcard and single-cluster partial-metadata watches
// of the same resource at once (check (d), meta.k8s.io v1 and v1beta1) while
// writers change labels: no listers and no other watchers, so nothing but the
// watch cache's per-event serializations is under test. cfg and exited are the
// server's (the test shard's or kcp's).
func mixedWatchOptions(t *testing.T, cfg *rest.Config, exited <-chan struct{}, clusters []string, groups, writers, objects int) hammer.Options {
	o := hammer.DefaultOptions()
	o.Config = cfg
	o.Clusters = clusters
	o.Objects = objects
	o.Listers, o.Watchers, o.MixedWatchers, o.Writers = 0, 0, groups, writers
	o.WatchWindow = 2 * time.Second
	o.Duration = 10 * time.Second
	o.MaxRequests = maxRequests(t)
	o.ServerExited = exited
	o.Logf = t.Logf
	return o
}

// TestPatchedShardMixedWatchers: with the carry, wildcard and single-cluster
// partial-metadata watchers of the same resource, open at the same time over
// the same cached events, each get their own answer, on a -race build.
func TestPatchedShardMixedWatchers(t *testing.T) {
	bin := servertest.ShardBinary(t, servertest.PatchedShard())
	s := servertest.StartShard(t, server.ShardOptions{Binary: bin, Env: serverEnv})
	rep := runHammer(t, mixedWatchOptions(t, s.Config(), s.Done(), e2eClusters, 2, 2, 10))
	if rep.Death.Died || s.Died() {
		t.Fatalf("the patched shard died %s into the load: %s\n%s", rep.TimeToDeath, rep.Death.Evidence, s.Fatal())
	}
	expectNoRace(t, s)
	expectOwnAnswers(t, rep)
}

// expectOwnAnswers asserts that check (d) ran and every mixed watcher got
// its own answer over both meta versions: neither wildcard nor single-cluster
// events of typed objects carry kcp.io/original-api-version.
func expectOwnAnswers(t *testing.T, rep *hammer.Report) {
	t.Helper()
	c := mixedWatchResult(t, rep)
	if c.Violations > 0 {
		t.Errorf("check (d): %d of %d events wrong, e.g. %v (values %v)", c.Violations, c.Checked, c.Samples, c.Values)
	}
	for _, want := range []string{`wildcard: <missing>`, `single-cluster: <missing>`} {
		if c.Values[want] == 0 {
			t.Errorf("check (d) saw no event of %s: %v", want, c.Values)
		}
	}
	for _, name := range []string{"watch mixed v1 wildcard", "watch mixed v1beta1 wildcard", "watch mixed v1 single-cluster", "watch mixed v1beta1 single-cluster"} {
		if o := op(rep, name); o.OK == 0 {
			t.Errorf("no successful %s: %+v", name, o)
		}
	}
	if n := rep.Server5xx(); n > 0 {
		t.Errorf("the server answered %d requests with 5xx", n)
	}
	if rep.SuccessfulWrites == 0 {
		t.Error("no write succeeded: the watches saw no MODIFIED events to share")
	}
	if rep.ExitCode != hammer.ExitClean {
		t.Errorf("verdict %q (exit %d), want clean", rep.Verdict, rep.ExitCode)
	}
}

// TestPristineShardMixesUpWatchers is the positive control of
// TestPatchedShardMixedWatchers: on the fork as kcp ships it, one wildcard
// and one single-cluster watcher (per meta version) and one sequential writer
// are enough for the single-cluster watcher to receive the "" the wildcard
// one wrote into the cached object. The load is
// kept low so that the shard does not die of the concurrent map writes first
// (the watches start from a fresh resourceVersion, so no watcher replays
// the cache's shared objects); what must be detected is the mix-up itself.
func TestPristineShardMixesUpWatchers(t *testing.T) {
	bin := servertest.ShardBinary(t, server.ShardBuild{Pristine: true})
	s := servertest.StartShard(t, server.ShardOptions{Binary: bin, Env: serverEnv})
	o := mixedWatchOptions(t, s.Config(), s.Done(), e2eClusters, 1, 1, 5)
	o.WriteMode = hammer.WritePatch
	rep := runHammer(t, o)

	if rep.Death.Died || s.Died() {
		t.Fatalf("the pristine shard died %s into a low mixed-watch load, so the mix-up could not be observed: %s\n%s", rep.TimeToDeath, rep.Death.Evidence, s.Fatal())
	}
	expectMixedUp(t, rep)
}

// mixedWatchResult returns check (d)'s result, and stops the test unless the
// check ran and saw events.
func mixedWatchResult(t *testing.T, rep *hammer.Report) checks.Result {
	t.Helper()
	c := rep.Result(checks.MixedWatchers)
	if !c.Ran || c.Checked == 0 {
		t.Fatalf("check (d) did not run: %+v", c)
	}
	return c
}

// expectMixedUp asserts that check (d) ran and caught a single-cluster
// watcher receiving kcp.io/original-api-version "" (the positive control of
// expectOwnAnswers).
func expectMixedUp(t *testing.T, rep *hammer.Report) {
	t.Helper()
	c := mixedWatchResult(t, rep)
	if c.Values[`single-cluster: ""`] == 0 {
		t.Fatalf("no single-cluster watcher received the wildcard watcher's \"\" on the pristine server (%d events: %v): the positive control lost its teeth", c.Checked, c.Values)
	}
	if !c.Violated() || rep.ExitCode != hammer.ExitViolated {
		t.Errorf("check (d) %+v, exit %d: want violated, exit %d", c, rep.ExitCode, hammer.ExitViolated)
	}
	t.Logf("pristine: %d of %d mixed-watch events wrong (%d single-cluster events with the annotation)",
		c.Violations, c.Checked, c.SingleClusterAnnotated())
}
