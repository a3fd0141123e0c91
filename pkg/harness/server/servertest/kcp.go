package servertest

import (
	"cmp"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// StartKCP starts kcp for a test (opts.Progress defaults to t.Logf) and
// stops it at cleanup (StopKCPAtCleanup).
func StartKCP(t testing.TB, opts server.KCPOptions) *server.KCP {
	t.Helper()
	if opts.Progress == nil {
		opts.Progress = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), server.KCPReadyTimeout+time.Minute)
	defer cancel()
	s, err := server.StartKCP(ctx, opts)
	if err != nil {
		t.Fatalf("starting kcp: %v", err)
	}
	StopKCPAtCleanup(t, s)
	return s
}

// StartKCPWithWorkspaces starts kcp for a test with workspaces root:<name>
// (server.StartKCPWithWorkspaces) and returns it with their logical
// clusters; kcp stops at cleanup.
func StartKCPWithWorkspaces(t testing.TB, opts server.KCPOptions, names []string) (*server.KCP, []string) {
	t.Helper()
	if opts.Progress == nil {
		opts.Progress = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), server.KCPReadyTimeout+server.WorkspaceReadyTimeout)
	defer cancel()
	s, clusters, err := server.StartKCPWithWorkspaces(ctx, opts, names)
	if err != nil {
		t.Fatalf("starting kcp with workspaces: %v", err)
	}
	StopKCPAtCleanup(t, s)
	return s, clusters
}

// StopKCPAtCleanup stops s at cleanup, for a kcp started elsewhere (kcpe2e):
// a kcp that died on its own is the test's to judge, a report of the cache
// mutation detector fails the test (ExpectNoCacheMutations), so does a
// switch kcp did not honour (ExpectCacheMutationDetectorHonoured), and a failed
// test gets the last lines of kcp's output.
func StopKCPAtCleanup(t testing.TB, s *server.KCP) {
	t.Cleanup(func() {
		if err := s.Stop(); err != nil && !s.Died() {
			t.Logf("stopping kcp: %v", err)
		}
		ExpectNoCacheMutations(t, "kcp", s.Stderr())
		ExpectCacheMutationDetectorHonoured(t, "kcp", s.Server)
		if t.Failed() {
			t.Logf("kcp output (last lines):\n%s", server.TailLines(s.Stderr(), 40))
		}
	})
}

// topologyStartTimeout bounds the start of the whole sharded topology: six
// servers one after the other, each up to TopologyReadyTimeout on a busy
// machine, though together they take a minute or two.
const topologyStartTimeout = 15 * time.Minute

// StartTopology starts kcp's sharded topology for a test (opts.Progress
// defaults to t.Logf) and stops it at cleanup, logging the output of every
// server when the test failed.
func StartTopology(t testing.TB, opts server.TopologyOptions) *server.Topology {
	t.Helper()
	if opts.Progress == nil {
		opts.Progress = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), topologyStartTimeout)
	defer cancel()
	topo, err := server.StartTopology(ctx, opts)
	if err != nil {
		t.Fatalf("starting the sharded kcp: %v", err)
	}
	t.Logf("sharded kcp (%d shards, cache server, %d virtual workspaces, front-proxy) ready after %s",
		len(topo.Shards), len(topo.VirtualWorkspaces), topo.StartedIn.Round(time.Second))
	t.Cleanup(func() {
		if err := topo.Stop(); err != nil {
			t.Logf("stopping the sharded kcp: %v", err)
		}
		for _, c := range topo.Components() {
			ExpectNoCacheMutations(t, c.Name, c.Stderr())
		}
		// The shards are kcp; what the other servers make is theirs.
		for _, c := range topo.Shards {
			ExpectCacheMutationDetectorHonoured(t, c.Name, c.Server)
		}
		if t.Failed() {
			for _, c := range topo.Components() {
				t.Logf("%s output (last lines, all in %s/output.log):\n%s", c.Name, c.Dir, server.TailLines(c.Stderr(), 20))
			}
		}
	})
	return topo
}

// ExpectNoCacheMutations fails t if a server's output has a report of
// client-go's cache mutation detector: with KUBE_CACHE_MUTATION_DETECTOR on,
// an object the fork's watch cache (with the carry's detector patch) or one
// of the server's informers handed out was changed by its reader.
func ExpectNoCacheMutations(t testing.TB, name, output string) {
	t.Helper()
	m := server.ParseCacheMutations(output)
	if len(m.Reports) == 0 && m.Panic == "" {
		return
	}
	first := "none printed"
	if len(m.Reports) > 0 {
		r := m.Reports[0]
		first = fmt.Sprintf("%s[%d] %q: now %q, when stored %q", r.Cache, r.Index, r.Object, r.Now, r.Stored)
	}
	t.Errorf("%s: the cache mutation detector reported %d changed object(s) (%s); the first: %s", name, len(m.Reports), cmp.Or(m.Panic, "no panic"), first)
}

// ExpectCacheMutationDetectorHonoured fails t if s ran with the cache
// mutation detector's switch on but its output never says client-go made a
// detector: ExpectNoCacheMutations would then pass for a server that checked
// nothing.
func ExpectCacheMutationDetectorHonoured(t testing.TB, name string, s *server.Server) {
	t.Helper()
	if s.CacheMutationDetectorOn() && server.CacheMutationDetectorsMade(s.Stderr()) == 0 {
		t.Errorf("%s ran with %s but its output never says a cache mutation detector was made: the switch did not reach its caches, and no report proves nothing", name, server.CacheMutationDetectorOn)
	}
}
