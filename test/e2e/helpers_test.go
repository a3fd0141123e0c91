package e2e

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// The suite's load, the one that crashed a real kcp v0.32.3: 8 listers (mixed v1/v1beta1, rv ""/"0", paged, two
// through kcp's metadata client), 2 watchers and 4 writers over 50
// ClusterRoles and 50 ConfigMaps in each of 3 logical clusters.
var e2eClusters = []string{"e2e-a", "e2e-b", "e2e-c"}

const (
	defaultLoadDuration = 20 * time.Second
	defaultMaxRequests  = 200000
	// deathGrace is how long a shard the hammer saw die may take to exit.
	deathGrace = 30 * time.Second
	// pristineDeathBound is the least bound of the load that must kill the
	// pristine shard. On a quiet machine it dies within seconds; with other
	// live suites and kcp builds sharing 2 cores, 30 s was seen to pass
	// without a death (55 req/s), so the bound leaves room for a busy CI.
	pristineDeathBound = 90 * time.Second
)

func loadDuration(t *testing.T) time.Duration {
	if v := os.Getenv("KCP_CARRY_E2E_LOAD_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("KCP_CARRY_E2E_LOAD_DURATION=%q: want a positive Go duration", v)
		}
		return d
	}
	return defaultLoadDuration
}

func maxRequests(t *testing.T) int64 {
	if v := os.Getenv("KCP_CARRY_E2E_MAX_REQUESTS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			t.Fatalf("KCP_CARRY_E2E_MAX_REQUESTS=%q: want a positive integer", v)
		}
		return n
	}
	return defaultMaxRequests
}

// suiteObjects is how many objects of each resource the suite's load seeds
// in each logical cluster.
const suiteObjects = 50

// loadOptions is the suite's load (see e2eClusters) against a shard.
// serverEnv is the environment of every server the suite starts, the
// test shard and kcp, patched or pristine alike (so each positive control
// stays the same test as its patched twin): more Ps than the machine has
// cores, so that the kernel preempts threads running Go code anywhere, also
// in the middle of a map write, and a concurrent write the pristine fork
// lets through is caught within seconds even on a busy machine. Measured
// with 4 CPU burners on 2 cores: the pristine shard died 0.4 to 21 s into
// the load with GOMAXPROCS=8, 17 to 85 s in with the default of 2 (one
// later run outlived the 90 s bound).
var serverEnv = []string{"GOMAXPROCS=8"}

func loadOptions(t *testing.T, s *server.Shard) hammer.Options {
	return suiteLoad(t, s.Config(), s.Done(), e2eClusters)
}

// suiteLoad is the suite's load against any server (the test shard or kcp):
// 8 listers (v1, v1beta1, rv "" and "0", paged, kcp's metadata client), 2
// wildcard watchers, 4 writers over 50 ClusterRoles and 50 ConfigMaps in each
// of clusters, bounded by loadDuration and maxRequests.
func suiteLoad(t *testing.T, cfg *rest.Config, exited <-chan struct{}, clusters []string) hammer.Options {
	o := hammer.DefaultOptions()
	o.Config = cfg
	o.Clusters = clusters
	o.Objects = suiteObjects
	o.Listers, o.Watchers, o.Writers = 8, 2, 4
	o.Duration = loadDuration(t)
	o.MaxRequests = maxRequests(t)
	o.ServerExited = exited
	o.Logf = t.Logf
	return o
}

// runHammer runs the hammer and logs its report.
func runHammer(t *testing.T, o hammer.Options) *hammer.Report {
	t.Helper()
	rep, err := hammer.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("hammer: %v", err)
	}
	var b bytes.Buffer
	_ = rep.WriteText(&b)
	t.Logf("hammer report:\n%s", b.String())
	return rep
}

// runSequentialProbe runs o as the one-request probe: one wildcard
// partial-metadata LIST per resource instead of the load, then the checks.
func runSequentialProbe(t *testing.T, o hammer.Options) *hammer.Report {
	t.Helper()
	o.SequentialProbe = true
	return runHammer(t, o)
}

// waitExit waits for a shard the hammer saw die to exit, and returns its
// fatal runtime error.
func waitExit(t *testing.T, s *server.Shard) *server.Fatal {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(deathGrace):
		t.Fatalf("the hammer reported the shard dead but its process (pid %d) is still running after %s", s.PID(), deathGrace)
	}
	return s.Fatal()
}

// mapFatal reports whether f is the concurrent map failure of this bug.
func mapFatal(f *server.Fatal) bool {
	return f.ConcurrentMap() && (f.HasFrame("setKCPOriginalAPIVersionAnnotation") || f.HasFrame("encoding/json"))
}

func expectNoRace(t *testing.T, s *server.Shard) {
	t.Helper()
	if strings.Contains(s.Stderr(), server.SigDataRace) {
		t.Errorf("the race detector reported a DATA RACE in the shard:\n%s", s.Fatal())
	}
}

// loadChecks are the checks the suite's load runs: (a), (b) and (c).
var loadChecks = []string{checks.APIVersion, checks.Pollution, checks.LostWrites}

// expectChecksHeld fails unless each named check ran on more than zero items
// without a violation.
func expectChecksHeld(t *testing.T, rep *hammer.Report, names ...string) {
	t.Helper()
	for _, name := range names {
		c := rep.Result(name)
		if !c.Ran || c.Checked == 0 {
			t.Errorf("check %s did not run or checked nothing: %s", c.Title(), c.Note)
		} else if c.Violations > 0 {
			t.Errorf("check %s: %d violations, e.g. %v", c.Title(), c.Violations, c.Samples)
		}
	}
}

// checkedCounts says how many items the suite's load checks checked:
// "checks a/b/c checked 121798/1619/300".
func checkedCounts(rep *hammer.Report) string {
	var ids, counts []string
	for _, name := range loadChecks {
		c := rep.Result(name)
		ids, counts = append(ids, c.ID), append(counts, strconv.FormatInt(c.Checked, 10))
	}
	return "checks " + strings.Join(ids, "/") + " checked " + strings.Join(counts, "/")
}

func op(rep *hammer.Report, name string) hammer.OpStats {
	for _, o := range rep.Ops {
		if o.Name == name {
			return o
		}
	}
	return hammer.OpStats{Name: name}
}

// requireLoadRan fails unless every kind of worker got answers.
func requireLoadRan(t *testing.T, rep *hammer.Report) {
	t.Helper()
	if rep.Seed.Objects != 300 {
		t.Errorf("the hammer used %d objects, want 300", rep.Seed.Objects)
	}
	if o := op(rep, "list kcp-client rv=0"); o.OK == 0 {
		t.Errorf("no successful LIST through kcp's metadata client: %+v", o)
	}
	if rep.PartialItems == 0 || rep.WatchEvents == 0 {
		t.Errorf("partial items %d, watch events %d: want both > 0", rep.PartialItems, rep.WatchEvents)
	}
}
