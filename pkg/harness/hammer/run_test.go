package hammer

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
	"github.com/kcp-carry/kcp-carry/pkg/harness/partialmeta"
)

// smallOptions is a fast load against a fake server: every kind of worker,
// bounded by a small budget.
func smallOptions(f *fakeServer) Options {
	o := DefaultOptions()
	o.Config = f.config()
	o.Clusters = []string{"c1", "c2", "c3"}
	o.Objects = 5
	o.Duration = 5 * time.Second
	o.MaxRequests = 400
	o.WatchWindow = time.Second
	o.PageSize = 4
	o.RequestTimeout = 5 * time.Second
	o.SyncTimeout = 5 * time.Second
	return o
}

func mustRun(t *testing.T, o Options) *Report {
	t.Helper()
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", b.String())
	return rep
}

func opByName(rep *Report, name string) (OpStats, bool) {
	for _, o := range rep.Ops {
		if o.Name == name {
			return o, true
		}
	}
	return OpStats{}, false
}

func TestRunCleanServer(t *testing.T) {
	f := newFakeServer(t, nil)
	rep := mustRun(t, smallOptions(f))

	if rep.ExitCode != ExitClean || rep.Verdict != "clean" {
		t.Fatalf("verdict %q exit %d, want clean 0; error %q", rep.Verdict, rep.ExitCode, rep.Error)
	}
	if rep.Seed.Objects != 30 || rep.Seed.Created != 30 {
		t.Errorf("seed = %+v, want 30 objects created", rep.Seed)
	}
	if rep.Requests == 0 || rep.Requests > 400 {
		t.Errorf("load requests = %d, want 1..400 (the budget)", rep.Requests)
	}
	for _, name := range []string{"list kcp-client rv=0", `list v1beta1 rv=""`, "list v1 rv=0", "list v1beta1 rv=0 paged", `list v1 rv=""`, "list v1beta1 rv=0", `list v1 rv="" paged`, `list kcp-client rv=""`, "watch v1", "watch v1beta1", "write get", "write update", "write patch"} {
		if o, ok := opByName(rep, name); !ok || o.OK == 0 {
			t.Errorf("operation %q: %+v, want successful requests", name, o)
		}
	}
	if f.accepts[partialmeta.ListAccept("v1")] == 0 || f.accepts[partialmeta.ListAccept("v1beta1")] == 0 || f.accepts[partialmeta.ObjectAccept("v1")] == 0 {
		t.Errorf("accept headers seen: %v", f.accepts)
	}
	for _, name := range []string{checks.APIVersion, checks.Pollution, checks.LostWrites} {
		if c := rep.Result(name); !c.Ran || c.Violations != 0 || c.Checked == 0 {
			t.Errorf("check %s: %+v, want ran, checked > 0, no violations", c.Name, c)
		}
	}
	// Typed items carry no key: every value seen is "<missing>".
	if a := rep.Result(checks.APIVersion); a.Values[checks.MissingValue] == 0 || len(a.Values) != 1 {
		t.Errorf("check (a) values = %v, want only %s", a.Values, checks.MissingValue)
	}
	if rep.WatchEvents == 0 || rep.SuccessfulWrites == 0 || rep.PartialItems == 0 {
		t.Errorf("watch events %d, writes %d, partial items %d: want all > 0", rep.WatchEvents, rep.SuccessfulWrites, rep.PartialItems)
	}
	if rep.Death.Died {
		t.Errorf("death reported: %+v", rep.Death)
	}
	// 5 wildcard-list sources and GETs: every seeded object was read 7 ways.
	if b := rep.Result(checks.Pollution); len(b.Sources) != 5 {
		t.Errorf("pollution sources = %d, want 5", len(b.Sources))
	}
}

func TestRunPollutingServer(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.pollute = true })
	rep := mustRun(t, smallOptions(f))

	if rep.ExitCode != ExitViolated {
		t.Fatalf("exit %d (%s), want %d", rep.ExitCode, rep.Verdict, ExitViolated)
	}
	if a := rep.Result(checks.APIVersion); !a.Violated() || a.Values[`""`] != a.Checked {
		t.Errorf("check (a) = %+v, want every value \"\"", a)
	}
	if b := rep.Result(checks.Pollution); !b.Violated() {
		t.Errorf("check (b) = %+v, want violated", b)
	}
	if c := rep.Result(checks.LostWrites); c.Violated() {
		t.Errorf("check (c) = %+v, want no lost writes", c)
	}
}

func TestSequentialProbeOneListPerResource(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.pollute = true })
	o := smallOptions(f)
	o.SequentialProbe = true
	rep := mustRun(t, o)

	if rep.Mode != "probe" || rep.ExitCode != ExitViolated {
		t.Fatalf("mode %q exit %d, want probe %d", rep.Mode, rep.ExitCode, ExitViolated)
	}
	if rep.Requests != 2 {
		t.Errorf("probe sent %d requests, want one LIST per resource (2)", rep.Requests)
	}
	if got := f.count("GET", "/clusters/*/apis/rbac.authorization.k8s.io/v1/clusterroles"); got != 2 {
		// the probe's partial LIST and the after-load full wildcard LIST
		t.Errorf("wildcard clusterrole LISTs = %d, want 2", got)
	}
	for _, s := range rep.Result(checks.Pollution).Sources {
		if s.Ran && s.Polluted != s.Checked {
			t.Errorf("source %s: %d of %d polluted, want all", s.Name, s.Polluted, s.Checked)
		}
	}
	if c := rep.Result(checks.LostWrites); c.Ran {
		t.Errorf("check (c) ran without writers: %+v", c)
	}
}

func TestSequentialProbeCleanServer(t *testing.T) {
	f := newFakeServer(t, nil)
	o := smallOptions(f)
	o.SequentialProbe = true
	o.Cleanup = true
	rep := mustRun(t, o)
	if rep.ExitCode != ExitClean {
		t.Fatalf("exit %d (%s), want 0", rep.ExitCode, rep.Verdict)
	}
	if rep.Seed.Deleted != 30 {
		t.Errorf("cleanup deleted %d, want 30", rep.Seed.Deleted)
	}
	if f.stored("clusterroles", "c1", "", "hammer-0000") != nil {
		t.Error("cleanup left hammer-0000 behind")
	}
}

func TestServerDeath(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.dieAfter = 150 })
	o := smallOptions(f)
	o.MaxRequests = 100000
	o.Duration = 20 * time.Second
	start := time.Now()
	rep := mustRun(t, o)

	if rep.ExitCode != ExitDied || !rep.Death.Died {
		t.Fatalf("exit %d death %+v, want %d and died", rep.ExitCode, rep.Death, ExitDied)
	}
	if rep.Death.Phase != "load" || rep.TimeToDeath <= 0 || rep.TimeToDeath > rep.LoadElapsed {
		t.Errorf("death phase %q after %s of %s load", rep.Death.Phase, rep.TimeToDeath, rep.LoadElapsed)
	}
	if el := time.Since(start); el > 15*time.Second {
		t.Errorf("the run took %s after the server died; the hammer must stop", el)
	}
	if rep.Result(checks.Pollution).Ran || rep.Result(checks.LostWrites).Ran {
		t.Errorf("checks (b)/(c) ran against a dead server")
	}
	if !strings.Contains(rep.Death.Evidence, "dial") {
		t.Errorf("evidence %q does not mention the dial check", rep.Death.Evidence)
	}
}

func TestServerExitedSignal(t *testing.T) {
	f := newFakeServer(t, nil)
	o := smallOptions(f)
	o.MaxRequests = 1 << 40
	o.Duration = 20 * time.Second
	exited := make(chan struct{})
	o.ServerExited = exited
	time.AfterFunc(500*time.Millisecond, func() { f.close(); close(exited) })
	rep := mustRun(t, o)
	if rep.ExitCode != ExitDied || rep.LoadElapsed > 10*time.Second {
		t.Fatalf("exit %d after %s, want %d promptly", rep.ExitCode, rep.LoadElapsed, ExitDied)
	}
}

func TestLostWrites(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.dropWrites = true })
	rep := mustRun(t, smallOptions(f))
	if c := rep.Result(checks.LostWrites); rep.ExitCode != ExitViolated || !c.Violated() {
		t.Fatalf("exit %d, check (c) %+v; want %d and violated", rep.ExitCode, c, ExitViolated)
	}
	if rep.Result(checks.APIVersion).Violated() || rep.Result(checks.Pollution).Violated() {
		t.Errorf("checks (a)/(b) violated on a server that only drops writes")
	}
}

func TestServerErrors(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.fail5xxEvery = 7 })
	o := smallOptions(f)
	o.NoAfterChecks = true
	rep := mustRun(t, o)
	if rep.ExitCode != ExitServerErrors || rep.Server5xx() == 0 {
		t.Fatalf("exit %d with %d 5xx, want %d", rep.ExitCode, rep.Server5xx(), ExitServerErrors)
	}
}

func TestClusterScopeSkipsCheckA(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.pollute = true })
	o := smallOptions(f)
	o.Scope = ScopeCluster
	rep := mustRun(t, o)
	if a := rep.Result(checks.APIVersion); a.Ran || a.Enabled {
		t.Errorf("check (a) ran on non-wildcard requests: %+v", a)
	}
	if rep.ExitCode != ExitClean {
		t.Errorf("exit %d (%s): the fake pollutes only on wildcard requests", rep.ExitCode, rep.Verdict)
	}
	if f.count("GET", "/clusters/*/api/v1/configmaps") != 1 {
		t.Errorf("cluster scope sent wildcard configmap LISTs besides the after-load read")
	}
}

// TestFullObjectListers: json listers send full-object wildcard LISTs, which
// check (a) does not judge; with no partial lister or watcher it is off, and
// the after-load checks still run.
func TestFullObjectListers(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.pollute = true })
	o := smallOptions(f)
	o.Watchers, o.Listers = 0, 2
	var err error
	if o.ListerShapes, err = ParseListerShapes("json:0,json::paged"); err != nil {
		t.Fatal(err)
	}
	rep := mustRun(t, o)
	if rep.ExitCode != ExitClean {
		t.Fatalf("exit %d (%s), want clean: the fake pollutes partial answers only", rep.ExitCode, rep.Verdict)
	}
	for _, name := range []string{"list json rv=0", `list json rv="" paged`} {
		if op, ok := opByName(rep, name); !ok || op.OK == 0 {
			t.Errorf("operation %q: %+v, want successful requests", name, op)
		}
	}
	if a := rep.Result(checks.APIVersion); a.Enabled || rep.PartialItems != 0 {
		t.Errorf("check (a) %+v with %d partial items, want off and none", a, rep.PartialItems)
	}
	if b := rep.Result(checks.Pollution); !b.Ran || b.Checked == 0 {
		t.Errorf("check (b) = %+v, want it to run", b)
	}
}

func TestWildcardFullListRefused(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.noWildcardFull = true })
	rep := mustRun(t, smallOptions(f))
	if rep.ExitCode != ExitClean {
		t.Fatalf("exit %d (%s), want clean: a refused full wildcard list is skipped", rep.ExitCode, rep.Verdict)
	}
	for _, s := range rep.Result(checks.Pollution).Sources {
		if strings.HasPrefix(s.Name, "wildcard") && s.Ran {
			t.Errorf("source %s ran: %+v", s.Name, s)
		}
	}
}

func TestExistingObjectsAndCleanupAll(t *testing.T) {
	f := newFakeServer(t, nil)
	o := smallOptions(f)
	o.Listers, o.Watchers, o.Writers = 1, 0, 0
	o.MaxRequests = 5
	first := mustRun(t, o)
	second := mustRun(t, o)
	if first.Seed.Created != 30 || second.Seed.Created != 0 || second.Seed.Existed != 30 {
		t.Fatalf("seeding twice: first %+v, second %+v", first.Seed, second.Seed)
	}
	n, err := CleanupAll(context.Background(), o)
	if err != nil || n != 30 {
		t.Fatalf("CleanupAll = %d, %v; want 30", n, err)
	}
	if f.stored("configmaps", "c2", "default", "hammer-0004") != nil {
		t.Error("CleanupAll left an object behind")
	}
}

func TestBudgetBoundsLoad(t *testing.T) {
	f := newFakeServer(t, nil)
	o := smallOptions(f)
	o.MaxRequests = 37
	o.Duration = time.Minute
	rep := mustRun(t, o)
	if rep.Requests > 37 {
		t.Errorf("load sent %d requests, budget 37", rep.Requests)
	}
	if rep.LoadElapsed > 30*time.Second {
		t.Errorf("load ran %s after its budget was spent", rep.LoadElapsed)
	}
}

func TestReportJSON(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.pollute = true })
	o := smallOptions(f)
	o.SequentialProbe = true
	rep := mustRun(t, o)
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatalf("JSON report does not parse: %v", err)
	}
	if back["exitCode"].(float64) != ExitViolated || back["verdict"] != "correctness violated" {
		t.Errorf("JSON exitCode/verdict = %v/%v", back["exitCode"], back["verdict"])
	}
	// Scripts find a check by name in the "checks" array, in report order.
	var names []string
	var pollution map[string]any
	for _, c := range back["checks"].([]any) {
		c := c.(map[string]any)
		names = append(names, c["id"].(string)+": "+c["name"].(string))
		if c["name"] == checks.Pollution {
			pollution = c
		}
	}
	if got := strings.Join(names, ", "); got != "a: original-api-version, b: no pollution, c: nothing lost, d: mixed watchers" {
		t.Errorf("JSON checks = %s", got)
	}
	if pollution == nil || pollution["violations"].(float64) == 0 || pollution["ran"] != true {
		t.Errorf("JSON check %q = %v, want ran with violations", checks.Pollution, pollution)
	}
}

func TestValidate(t *testing.T) {
	o := DefaultOptions()
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "no server") {
		t.Errorf("Validate without a server = %v", err)
	}
	o.Config = newFakeServer(t, nil).config()
	o.Objects = 0
	o.Clusters = []string{"*"}
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "--objects") || !strings.Contains(err.Error(), "--clusters") {
		t.Errorf("Validate = %v, want --objects and --clusters named", err)
	}
	if _, err := Run(context.Background(), o); err == nil {
		t.Error("Run accepted invalid options")
	}
}

func TestProgressLine(t *testing.T) {
	f := newFakeServer(t, nil)
	o := smallOptions(f)
	var progress bytes.Buffer
	o.Progress = &progress
	o.MaxRequests = 50
	mustRun(t, o)
	out := progress.String()
	if !strings.Contains(out, "\r\033[K[") || !strings.Contains(out, "req (") || !strings.Contains(out, "server alive") || !strings.HasSuffix(out, "\n") {
		t.Errorf("progress output %q", out)
	}
	// The last line counts the load only: at most the budget.
	last := out[strings.LastIndex(out, "\r")+1:]
	if !strings.Contains(last, "] 50 req") {
		t.Errorf("last progress line %q, want the load's 50 requests", last)
	}
}

func TestMixedWatchersEachGetTheirOwnAnswer(t *testing.T) {
	f := newFakeServer(t, nil)
	o := smallOptions(f)
	o.MixedWatchers = 1
	rep := mustRun(t, o)

	if rep.ExitCode != ExitClean {
		t.Fatalf("verdict %q exit %d, want clean; error %q", rep.Verdict, rep.ExitCode, rep.Error)
	}
	d := rep.Result(checks.MixedWatchers)
	if !d.Ran || d.Checked == 0 || d.Violations != 0 {
		t.Errorf("check (d) = %+v, want ran, checked > 0, no violations", d)
	}
	for _, k := range []string{`wildcard: <missing>`, `single-cluster: <missing>`} {
		if d.Values[k] == 0 {
			t.Errorf("check (d) values = %v, want some %s", d.Values, k)
		}
	}
	for _, name := range []string{"watch mixed v1 wildcard", "watch mixed v1beta1 wildcard", "watch mixed v1 single-cluster", "watch mixed v1beta1 single-cluster", "watch mixed list"} {
		if op, ok := opByName(rep, name); !ok || op.OK == 0 {
			t.Errorf("operation %q: %+v, want successful requests", name, op)
		}
	}
	if n := d.SingleClusterAnnotated(); n != 0 {
		t.Errorf("SingleClusterAnnotated = %d, want 0", n)
	}
}

func TestMixedWatchersMixUp(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.mixUpWatches = true })
	o := smallOptions(f)
	o.MixedWatchers = 1
	rep := mustRun(t, o)

	d := rep.Result(checks.MixedWatchers)
	if rep.ExitCode != ExitViolated || !d.Violated() {
		t.Fatalf("exit %d (%s), check (d) %+v: want check (d) violated, exit %d", rep.ExitCode, rep.Verdict, d, ExitViolated)
	}
	if n := d.SingleClusterAnnotated(); n == 0 || n != d.Violations {
		t.Errorf("SingleClusterAnnotated = %d, violations %d: want every violation a single-cluster event with the annotation", n, d.Violations)
	}
	var text bytes.Buffer
	_ = rep.WriteText(&text)
	if !strings.Contains(text.String(), "check d: mixed watchers: VIOLATED by ") {
		t.Errorf("the text report does not show check (d) violated:\n%s", text.String())
	}
}

func TestMixedWatchersOffByDefault(t *testing.T) {
	f := newFakeServer(t, nil)
	rep := mustRun(t, smallOptions(f))
	if d := rep.Result(checks.MixedWatchers); d.Ran || d.Enabled || d.Note != "no --mixed-watchers" {
		t.Errorf("check (d) = %+v, want not enabled: no --mixed-watchers", d)
	}
}
