package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcpbuild"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcppatches"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/kcpe2e"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/util/atomicfile"
)

// EnvSeriesLoad is how long TestRealKCPSeries runs the seed load on the kcp
// built from the series (a Go duration; default defaultSeriesLoad).
const EnvSeriesLoad = "KCP_CARRY_SERIES_LOAD"

const defaultSeriesLoad = 10 * time.Minute

// seriesMaxRate bounds the seed load's requests: its duration times this
// many a second (the hand run made about 1,100 a second on 2 cores),
// so the load ends on its duration, never on its count, yet stays bounded.
const seriesMaxRate = 5000

// TestRealKCPSeries (make test-series) is kcp as it is after the series
// merges (issue 50, item 2): a copy of KCP_MAIN_SOURCE (and of KCP_SOURCE,
// kcp's release-0.32 form, when it is set) with every kcp pull request of
// kcp-patches/ applied in merge order (kcppatches.ApplyToCopyForms, git am,
// each in the form that applies), built with the carry through the overlay
// (carry build --kcp-source <that copy> --cmd cmd/kcp), and stock kcp from
// the unpatched tree (--pristine). Per tree, in .build/series/<tree>/:
//
//   - series-kcp: on the series' kcp, started with both mutation detector
//     switches on (kcpEnv, as kcp-patches/*-watch-cache-mutation-detector
//     sets them in kcp's shared e2e job), kcp's e2e subset (kcpe2e.Subset:
//     conformance, garbagecollector, quota) and every e2e test the series
//     adds or changes (seriesE2ETests: read from the patches) pass, and kcp
//     reports no changed object;
//   - identity: TestRealKCPIdentityWildcardPartialMetadata's check on it
//     sees no foreign object through an identity, and the identity's
//     storage outlives an unrelated CRD deletion;
//   - identity-without-fork-patch: the same check on the series' kcp built
//     without the fork's pull request identity-storage (carry build
//     --without): the identity's storage is torn down, its WATCH ends;
//   - seed-load: the suite's load (8 wildcard partial-metadata listers, 2
//     watchers, 4 writers) for KCP_CARRY_SERIES_LOAD (default 10m): kcp alive,
//     0 failed requests, every check held, nothing stored in etcd, no
//     detector report;
//   - stock: on stock kcp, the e2e tests of every pull request whose tests
//     need the series (failsOnStock) fail; the others' are run and recorded only.
//
// It writes series.json there and prints the table of it: each pull
// request, its form, whether it applies, its e2e tests on the series' kcp
// and on stock, and the time of each step.
func TestRealKCPSeries(t *testing.T) {
	if testing.Short() {
		t.Skip("live kcp: run without -short")
	}
	var trees []string
	if src := os.Getenv(EnvKCPMainSource); src != "" {
		trees = append(trees, src)
	} else {
		t.Skipf("kcp after the series is built from kcp main: set %s=<kcp main tree> (and %s=<kcp v0.32.3 tree> for the release-0.32 form)", EnvKCPMainSource, EnvKCPSource)
	}
	if src := os.Getenv(EnvKCPSource); src != "" {
		trees = append(trees, src)
	}
	testfs.NeedCommands(t, "git", "go")
	for _, src := range trees {
		t.Run(filepath.Base(filepath.Clean(src)), func(t *testing.T) { runSeries(t, src) })
	}
}

// seriesTest is one top-level e2e test a pull request adds or changes: its
// package directory in the kcp tree and its name.
type seriesTest = series.TestFunc

// seriesOutcome is one test's outcome on one kcp.
type seriesOutcome struct {
	Test    seriesTest `json:"test"`
	Outcome string     `json:"outcome"`
	Elapsed float64    `json:"elapsed"`
	// Why is the first failure line kept for the record.
	Why string `json:"why,omitempty"`
}

// seriesPR is one kcp pull request in the record.
type seriesPR struct {
	Name string `json:"name"`
	// Form is the directory of the form applied (kcp-patches/<name> or a
	// backport's), "" when it did not apply or was not tried.
	Form    string `json:"form,omitempty"`
	Patches int    `json:"patches"`
	// Hash is the applied form's series hash (series.Series.Hash).
	Hash string `json:"hash,omitempty"`
	// Applies: "yes", "no" (git am failed: ApplyError) or "not tried" (an
	// earlier pull request did not apply).
	Applies    string `json:"applies"`
	ApplyError string `json:"applyError,omitempty"`
	// FailsOnStock says its e2e tests must fail on stock kcp, and why: not the
	// export's Fix (red without its own changes), since a pin bump's tests
	// need the fork's fix, not the bump.
	FailsOnStock    bool            `json:"failsOnStock"`
	FailsOnStockWhy string          `json:"failsOnStockWhy"`
	Tests           []seriesTest    `json:"tests"`
	OnSeries        []seriesOutcome `json:"onSeries,omitempty"`
	OnStock         []seriesOutcome `json:"onStock,omitempty"`
}

// seriesStep is one step's time.
type seriesStep struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	OK      bool    `json:"ok"`
	Note    string  `json:"note,omitempty"`
}

// seriesLoadRecord is what the seed load did.
type seriesLoadRecord struct {
	Duration string `json:"duration"`
	Requests int64  `json:"requests"`
	Failed   int64  `json:"failed"`
	// Conflicts are the failed writes answered 409: optimistic
	// concurrency against kcp's own controllers, not a server error.
	Conflicts        int64   `json:"conflicts"`
	Server5xx        int64   `json:"server5xx"`
	ReqPerSec        float64 `json:"reqPerSec"`
	PartialItems     int64   `json:"partialItems"`
	SuccessfulWrites int64   `json:"successfulWrites"`
	Verdict          string  `json:"verdict"`
	Alive            bool    `json:"alive"`
	SeededObjects    int     `json:"seededObjects"`
	Stored           int     `json:"stored"` // seeded objects carrying the key in etcd
}

// seriesRecord is .build/series/<tree>/series.json.
type seriesRecord struct {
	Tree      string            `json:"tree"`
	Copy      string            `json:"copy"`
	Started   time.Time         `json:"started"`
	Elapsed   float64           `json:"elapsedSeconds"`
	Series    string            `json:"seriesKCP"`
	Stock     string            `json:"stockKCP"`
	PRs       []*seriesPR       `json:"pullRequests"`
	Steps     []seriesStep      `json:"steps"`
	Subset    []*kcpe2e.Result  `json:"subset,omitempty"`
	Identity  string            `json:"identity,omitempty"`
	Load      *seriesLoadRecord `json:"load,omitempty"`
	Detector  map[string]int    `json:"detectorReports"` // by kcp: reports of changed objects
	Detectors map[string]int    `json:"detectorsMade"`   // by kcp: detectors client-go made
	Passed    bool              `json:"passed"`
}

func (r *seriesRecord) step(name string, began time.Time, ok bool, note string) {
	r.Steps = append(r.Steps, seriesStep{Name: name, Seconds: time.Since(began).Round(100 * time.Millisecond).Seconds(), OK: ok, Note: note})
}

// runSeries is TestRealKCPSeries on one kcp tree.
func runSeries(t *testing.T, src string) {
	root := testfs.RepoRoot(t)
	carry := filepath.Join(root, "bin", "carry")
	if _, err := os.Stat(carry); err != nil {
		t.Fatalf("%s is missing: run `make overlay` (make test-series does)", carry)
	}
	prs, err := kcppatches.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(root, ".build", "series", filepath.Base(filepath.Clean(src)))
	tree := filepath.Join(work, "src")
	binDir := filepath.Join(work, "bin")
	rec := &seriesRecord{Tree: src, Copy: tree, Started: time.Now().UTC(), Detector: map[string]int{}, Detectors: map[string]int{}}
	t.Cleanup(func() {
		rec.Elapsed = time.Since(rec.Started).Round(time.Second).Seconds()
		rec.Passed = !t.Failed()
		writeSeriesRecord(t, work, rec)
	})

	// git am of every pull request, in merge order.
	began := time.Now()
	forms, applyErr := kcppatches.ApplyToCopyForms(context.Background(), src, tree, prs)
	for i, pr := range prs {
		p := &seriesPR{Name: pr.Name, Applies: "not tried"}
		switch {
		case i < len(forms):
			p.Applies, p.Patches, p.Hash = "yes", len(forms[i].Patches), forms[i].Hash
			p.Form, _ = filepath.Rel(root, forms[i].Dir)
			p.Tests = seriesE2ETests(forms[i])
			p.FailsOnStock, p.FailsOnStockWhy = failsOnStock(pr, forms[i])
		case i == len(forms) && applyErr != nil:
			p.Applies, p.ApplyError = "no", applyErr.Error()
		}
		rec.PRs = append(rec.PRs, p)
	}
	rec.step("apply kcp-patches/ (git am, merge order)", began, applyErr == nil, fmt.Sprintf("%d of %d pull requests", len(forms), len(prs)))
	if applyErr != nil {
		t.Fatalf("the series does not apply to %s: %v", src, applyErr)
	}
	for _, p := range rec.PRs {
		t.Logf("kcp-patches/%s: applied %s (%d patches); e2e tests %v; fails on stock: %t (%s)", p.Name, p.Form, p.Patches, p.Tests, p.FailsOnStock, p.FailsOnStockWhy)
	}

	// The builds: the series' kcp with the carry, stock kcp from the tree.
	version, err := kcpbuild.KCPVersion(context.Background(), root, src)
	if err != nil {
		t.Fatal(err)
	}
	rec.Series, rec.Stock = filepath.Join(binDir, "kcp"), filepath.Join(binDir, "kcp-pristine")
	seriesBuild(t, rec, "build the series' kcp (carried)", work, carry, "--kcp-source", tree, "--cmd", "cmd/kcp", "--out", binDir, "--kcp-version", version+"-series")
	seriesBuild(t, rec, "build stock kcp (--pristine)", work, carry, "--kcp-source", src, "--cmd", "cmd/kcp", "--out", binDir, "--pristine")
	if got := buildVariant(t, root, rec.Series); got != "patched" {
		t.Fatalf("%s is a %s build, want the carried one", rec.Series, got)
	}
	if got := buildVariant(t, root, rec.Stock); got != "pristine" {
		t.Fatalf("%s is a %s build, want the stock one", rec.Stock, got)
	}

	// Their e2e test binaries, from the copy with the series: kcp's subset
	// and the packages of the series' tests, one go command.
	tests := seriesTests(rec.PRs)
	pkgs := seriesPackages(tests)
	bins := &kcpTestBinaries{tree: tree, dir: filepath.Join(work, "e2e")}
	if err := os.MkdirAll(bins.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	bins.start(append(slices.Clone(kcpe2e.Subset), pkgs...)...)
	for _, p := range kcpe2e.Subset {
		bins.get(t, p)
	}
	for _, p := range pkgs {
		bins.get(t, p)
	}
	rec.step("compile kcp's e2e tests (go test -c, the copy's go.mod)", began, true, "")

	logDir := filepath.Join(work, "logs")
	onSeries := map[seriesTest]seriesOutcome{}
	t.Run("series-kcp", func(t *testing.T) {
		began := time.Now()
		s := startKCPForE2E(t, rec.Series, tree)
		rec.step("start the series' kcp (both detector switches on)", began, true, "")
		if !s.CacheMutationDetectorOn() {
			t.Errorf("the series' kcp runs without %s", server.CacheMutationDetectorOn)
		}
		began = time.Now()
		suiteOK := t.Run("kcp-suite", func(t *testing.T) {
			for _, p := range kcpe2e.Subset {
				t.Run(p.Name(), func(t *testing.T) {
					bin := bins.get(t, p)
					t.Parallel()
					res := runKCPTests(t, s, tree, p, bin, filepath.Join(logDir, "series"), p.Name(), suiteTimeout)
					t.Logf("the series' kcp: %s", res.Summary())
					expectAllPassed(t, p, res)
					rec.Subset = append(rec.Subset, res)
				})
			}
		})
		rec.step("kcp's e2e subset on the series' kcp", began, suiteOK, subsetSummary(rec.Subset))
		began = time.Now()
		testsOK := t.Run("series-tests", func(t *testing.T) {
			for _, p := range pkgs {
				res := runKCPTests(t, s, tree, p, bins.get(t, p), filepath.Join(logDir, "series"), "series-"+p.Name(), regressionTimeout)
				t.Logf("the series' kcp: %s", res.Summary())
				expectAllPassed(t, p, res)
				for _, o := range outcomes(p, res) {
					onSeries[o.Test] = o
				}
			}
		})
		rec.step("the series' e2e tests on the series' kcp", began, testsOK, fmt.Sprintf("%d tests", len(tests)))
		expectAliveAndReady(t, s)
		recordDetector(t, rec, "series-kcp", s, true)
	})
	for _, p := range rec.PRs {
		for _, tst := range p.Tests {
			p.OnSeries = append(p.OnSeries, onSeries[tst])
		}
	}

	// TestRealKCPIdentityWildcardPartialMetadata on the series' kcp: its
	// verdict reads KCP_SOURCE (the copy carries the identity fix, so no
	// foreign object may show) and its kcp KCP_BIN_DIR.
	began = time.Now()
	ok := t.Run("identity", func(t *testing.T) {
		// Its verdict reads kcp-patches/ again (identityFixCarried): the
		// pull requests must be the ones applied.
		expectSeriesUnchanged(t, root, forms)
		t.Setenv(EnvKCPSource, tree)
		t.Setenv(EnvKCPBinDir, binDir)
		t.Setenv("KCP_BINARY", "")
		TestRealKCPIdentityWildcardPartialMetadata(t)
	})
	rec.Identity = map[bool]string{true: "pass", false: "fail"}[ok]
	rec.step("TestRealKCPIdentityWildcardPartialMetadata on the series' kcp", began, ok, "")

	// Its positive control for the identity storage's lifetime: the same
	// test on the series' kcp built without the fork's pull request
	// identity-storage (carry build --without), where the WATCH through an
	// identity must end at an unrelated CRD deletion.
	began = time.Now()
	ok = t.Run("identity-without-fork-patch", func(t *testing.T) {
		expectSeriesUnchanged(t, root, forms)
		_, without := identityStoragePatches(t, root)
		res, err := kcpbuild.Build(context.Background(), kcpbuild.Options{
			Root: root, KCPSource: tree, Commands: []string{"cmd/kcp"}, OutDir: binDir,
			KCPVersion: version + "-series", Without: without, Progress: io.Discard,
		})
		if err != nil {
			t.Fatalf("carry build --kcp-source %s --without %s: %v", tree, strings.Join(without, " --without "), err)
		}
		t.Setenv(EnvKCPSource, tree)
		t.Setenv(EnvKCPBinDir, binDir)
		t.Setenv("KCP_BINARY", res.Binaries[0])
		TestRealKCPIdentityWildcardPartialMetadata(t)
	})
	rec.step("TestRealKCPIdentityWildcardPartialMetadata on the series' kcp without the fork's pull request "+identityStoragePR+" (its watch must end)", began, ok, "")

	began = time.Now()
	loadOK := t.Run("seed-load", func(t *testing.T) { seriesSeedLoad(t, rec) })
	rec.step("the seed load on the series' kcp", began, loadOK, rec.Load.summary())

	began = time.Now()
	stockOK := t.Run("stock", func(t *testing.T) { seriesOnStock(t, rec, tree, tests, bins, logDir) })
	rec.step("the series' e2e tests on stock kcp", began, stockOK, "")
}

// expectSeriesUnchanged fails t unless kcp-patches/ still holds the forms
// applied: an edit during the run would judge the tree by other patches.
func expectSeriesUnchanged(t *testing.T, root string, applied []*series.Series) {
	t.Helper()
	prs, err := kcppatches.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	now := map[string]string{}
	for _, pr := range prs {
		for _, form := range pr.Forms() {
			now[form.Dir] = form.Hash
		}
	}
	for _, form := range applied {
		if now[form.Dir] != form.Hash {
			t.Fatalf("%s changed after it was applied to the copy (series hash %s, now %q): run the test again", form.Dir, form.Hash, now[form.Dir])
		}
	}
}

// seriesBuild runs carry build as one step.
func seriesBuild(t *testing.T, rec *seriesRecord, step, work, carry string, args ...string) {
	t.Helper()
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(work, "build-"+map[bool]string{true: "stock", false: "series"}[slices.Contains(args, "--pristine")]+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	began := time.Now()
	cmd := exec.Command(carry, append([]string{"build"}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	err = cmd.Run()
	rec.step(step, began, err == nil, "")
	if err != nil {
		out, _ := os.ReadFile(logPath)
		t.Fatalf("carry build %s: %v\n%s", strings.Join(args, " "), err, server.TailLines(string(out), 30))
	}
	t.Logf("%s: carry build %s in %s (log %s)", step, strings.Join(args, " "), time.Since(began).Round(time.Second), logPath)
}

// seriesSeedLoad runs the suite's load on a fresh series kcp.
func seriesSeedLoad(t *testing.T, rec *seriesRecord) {
	d := defaultSeriesLoad
	if v := os.Getenv(EnvSeriesLoad); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive Go duration", EnvSeriesLoad, v)
		}
	}
	s, clusters := startKCPWithWorkspaces(t, rec.Series, t.TempDir())
	o := kcpLoadOptions(t, s, clusters)
	o.Duration = d
	o.MaxRequests = int64(d.Seconds() * seriesMaxRate)
	rep := runHammer(t, o)
	var conflicts int64
	for _, op := range rep.Ops {
		conflicts += op.Errors.Conflict
	}
	rec.Load = &seriesLoadRecord{Conflicts: conflicts,
		Duration: d.String(), Requests: rep.Requests, Failed: rep.Failed, Server5xx: rep.Server5xx(),
		ReqPerSec: rep.ReqPerSec, PartialItems: rep.PartialItems, SuccessfulWrites: rep.SuccessfulWrites,
		Verdict: rep.Verdict, Alive: !s.Died() && !rep.Death.Died,
	}
	expectSurvivedClean(t, s, rep)
	expectContract(t, rep)
	if n := rep.Failed - conflicts; n != 0 {
		t.Errorf("the seed load on the series' kcp: %d failed requests besides %d write conflicts (409), want 0", n, conflicts)
	}
	if rec.Load.Alive {
		stored := readSeeded(t, s, o)
		rec.Load.SeededObjects = len(stored)
		for key, st := range stored {
			if st.annotated {
				rec.Load.Stored++
				t.Errorf("%s: carries %s in etcd", key, hammer.OriginalAPIVersionAnnotation)
			}
		}
		t.Logf("%d seeded objects read from etcd, %d with %s", len(stored), rec.Load.Stored, hammer.OriginalAPIVersionAnnotation)
	}
	recordDetector(t, rec, "seed-load", s, true)
}

func (l *seriesLoadRecord) summary() string {
	if l == nil {
		return "did not run"
	}
	return fmt.Sprintf("%s: %d requests (%.0f/s), %d failed (%d of them write conflicts), %d 5xx, alive %t, %d seeded objects, %d stored with the key",
		l.Duration, l.Requests, l.ReqPerSec, l.Failed, l.Conflicts, l.Server5xx, l.Alive, l.SeededObjects, l.Stored)
}

// seriesOnStock runs the series' e2e tests on stock kcp, each test alone, in
// merge order, on one kcp started again if a test left it dead; the tests
// of one that failsOnStock must fail there.
func seriesOnStock(t *testing.T, rec *seriesRecord, tree string, tests []seriesTest, bins *kcpTestBinaries, logDir string) {
	stockDir := filepath.Join(logDir, "stock")
	var s *server.KCP
	onStock := map[seriesTest]seriesOutcome{}
	for i, tst := range tests {
		if s == nil || s.Died() {
			if s != nil {
				t.Logf("stock kcp died (%v); starting another for %s", s.ExitError(), tst)
			}
			s = startKCPForE2E(t, rec.Stock, tree)
		}
		p := kcpe2e.Package{Dir: tst.Dir, Tests: []string{tst.Name}}
		logName := fmt.Sprintf("%d-%s", i, tst.Name)
		res := runKCPTests(t, s, tree, p, bins.get(t, p), stockDir, logName, regressionTimeout)
		t.Logf("stock kcp: %s", res.Summary())
		o := outcomes(p, res)[0]
		if o.Outcome == kcpe2e.Fail {
			o.Why = stockFailureCause(t, tst, filepath.Join(stockDir, logName+".log"), res)
		}
		onStock[tst] = o
	}
	for _, p := range rec.PRs {
		for _, tst := range p.Tests {
			o := onStock[tst]
			p.OnStock = append(p.OnStock, o)
			if !p.FailsOnStock {
				continue
			}
			if o.Outcome != kcpe2e.Fail {
				t.Errorf("positive control: kcp-patches/%s must fail on stock kcp (%s), but its %s %s there", p.Name, p.FailsOnStockWhy, tst, o.Outcome)
				continue
			}
			if o.Why == "" {
				t.Errorf("positive control: kcp-patches/%s's %s failed on stock kcp, but not for its bug", p.Name, tst)
				continue
			}
			t.Logf("positive control: kcp-patches/%s's %s fails on stock kcp, as it must: %s", p.Name, tst, o.Why)
		}
	}
}

// stockFailureCause is the bug a failure on stock kcp shows, "" when it
// shows none of the known ones: the regression test's reads carrying ""
// (kcpe2e.Regression), the identity test's objects of another identity
// (kcpe2e.IdentityIsolation); any other test's first failure line.
func stockFailureCause(t *testing.T, tst seriesTest, logPath string, res *kcpe2e.Result) string {
	switch {
	case slices.Contains(kcpe2e.Regression.Tests, tst.Name):
		if found := emptyAnnotationLines(t, logPath); len(found) > 0 {
			return fmt.Sprintf("%d reads carry %s", len(found), emptyAnnotation)
		}
		if d := describeFailures(res); strings.Contains(d, "concurrent map") {
			return "kcp died: concurrent map access"
		}
		return ""
	case slices.Contains(kcpe2e.IdentityIsolation.Tests, tst.Name):
		if strings.Contains(describeFailures(res), "of another identity") {
			return "objects of another identity"
		}
		return ""
	}
	for _, tr := range res.Tests {
		for _, l := range tr.Output {
			if strings.Contains(l, "Error") || strings.Contains(l, "FAIL") {
				return strings.TrimSpace(l)
			}
		}
	}
	return "failed"
}

// recordDetector records what the detectors of s reported and made, and
// fails on a report (StopKCPAtCleanup fails on it too, at the end).
func recordDetector(t *testing.T, rec *seriesRecord, name string, s *server.KCP, want bool) {
	t.Helper()
	m := server.ParseCacheMutations(s.Stderr())
	rec.Detector[name] = len(m.Reports)
	rec.Detectors[name] = server.CacheMutationDetectorsMade(s.Stderr())
	if len(m.Reports) > 0 || m.Panic != "" {
		t.Errorf("%s: the cache mutation detector reported %d changed object(s) %s", name, len(m.Reports), m.Panic)
	}
	if want && rec.Detectors[name] == 0 {
		t.Errorf("%s: kcp's output never says a cache mutation detector was made", name)
	}
	t.Logf("%s: %d detector reports, %d detectors made", name, rec.Detector[name], rec.Detectors[name])
}

// outcomes are res's outcomes of p's tests (a test that did not run fails).
func outcomes(p kcpe2e.Package, res *kcpe2e.Result) []seriesOutcome {
	var out []seriesOutcome
	for _, name := range p.Tests {
		o := seriesOutcome{Test: seriesTest{Dir: p.Dir, Name: name}, Outcome: kcpe2e.Fail, Why: "did not run"}
		for _, tr := range res.Tests {
			if tr.Name == name {
				o.Outcome, o.Elapsed, o.Why = tr.Outcome, tr.Elapsed, ""
			}
		}
		out = append(out, o)
	}
	return out
}

// seriesE2ETests are the top-level tests a pull request's patches add or
// change under kcp's test/e2e/: those whose body a hunk's added or removed
// line is in (the function the hunk header names, or one the hunk starts).
func seriesE2ETests(s *series.Series) []seriesTest {
	return series.ChangedTests(s.Patches, "test/e2e/")
}

// failsOnStock says whether a pull request's e2e tests must fail on stock kcp, and
// why: it changes kcp's own code (a Go file outside test/ that is no test),
// so its tests need it; or it is a pin bump (<n>-pin-bump), whose fix is
// the fork's, the carry, that the bump brings to kcp. The others (a new
// CI target, a test that pins what kcp does today) only need to pass.
func failsOnStock(pr *kcppatches.PR, form *series.Series) (bool, string) {
	for _, p := range form.Patches {
		for _, f := range p.Files {
			n := f.NewName
			if f.IsDelete {
				n = f.OldName
			}
			if strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") && !strings.HasPrefix(n, "test/") {
				return true, "changes kcp's code: " + n
			}
		}
	}
	if strings.HasSuffix(pr.Name, "-pin-bump") && len(form.Patches) > 0 {
		return true, "the pin bump that brings the fork's fix (the carry)"
	}
	return false, "no change to kcp's code"
}

// seriesTests are the pull requests' tests, each once, in merge order.
func seriesTests(prs []*seriesPR) []seriesTest {
	var tests []seriesTest
	for _, p := range prs {
		for _, t := range p.Tests {
			if !slices.Contains(tests, t) {
				tests = append(tests, t)
			}
		}
	}
	return tests
}

// seriesPackages groups tests by package, in their order.
func seriesPackages(tests []seriesTest) []kcpe2e.Package {
	var pkgs []kcpe2e.Package
	for _, t := range tests {
		i := slices.IndexFunc(pkgs, func(p kcpe2e.Package) bool { return p.Dir == t.Dir })
		if i < 0 {
			pkgs = append(pkgs, kcpe2e.Package{Dir: t.Dir})
			i = len(pkgs) - 1
		}
		pkgs[i].Tests = append(pkgs[i].Tests, t.Name)
	}
	return pkgs
}

func subsetSummary(rs []*kcpe2e.Result) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s %d passed, %d failed", filepath.Base(r.Package), r.Passed, r.Failed))
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// writeSeriesRecord writes work/series.json and logs the table.
func writeSeriesRecord(t *testing.T, work string, rec *seriesRecord) {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		t.Error(err)
		return
	}
	path := filepath.Join(work, "series.json")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Error(err)
		return
	}
	if err := atomicfile.Write(path, append(data, '\n'), 0o644); err != nil {
		t.Error(err)
		return
	}
	t.Logf("record: %s\n%s", path, seriesTable(rec))
}

// seriesTable is the record as markdown tables: the pull requests, then
// the steps.
func seriesTable(rec *seriesRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kcp after the series: %s (copy %s)\n\n", rec.Tree, rec.Copy)
	b.WriteString("| kcp pull request | applies | must fail on stock | its e2e tests | on the series' kcp | on stock kcp |\n|---|---|---|---|---|---|\n")
	for _, p := range rec.PRs {
		applies := p.Applies
		if p.Applies == "yes" {
			applies = fmt.Sprintf("yes (%d patches)", p.Patches)
			if p.Form != "" && !strings.HasSuffix(p.Form, p.Name) {
				applies += ", " + filepath.Base(p.Form)
			}
		}
		mustFail := "no"
		if p.FailsOnStock {
			mustFail = "yes"
		}
		var names []string
		for _, t := range p.Tests {
			names = append(names, "`"+t.Name+"`")
		}
		if len(names) == 0 {
			names, mustFail = []string{"none"}, "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", p.Name, applies, mustFail, strings.Join(names, ", "), outcomeCells(p.OnSeries), outcomeCells(p.OnStock))
	}
	b.WriteString("\n| step | time | ok | note |\n|---|---|---|---|\n")
	for _, s := range rec.Steps {
		fmt.Fprintf(&b, "| %s | %s | %t | %s |\n", s.Name, (time.Duration(s.Seconds * float64(time.Second))).Round(time.Second), s.OK, s.Note)
	}
	fmt.Fprintf(&b, "\nidentity check: %s; detector reports %v (detectors made %v); total %s\n", rec.Identity, rec.Detector, rec.Detectors, time.Duration(rec.Elapsed*float64(time.Second)))
	return b.String()
}

func outcomeCells(outs []seriesOutcome) string {
	if len(outs) == 0 {
		return "—"
	}
	var parts []string
	for _, o := range outs {
		if o.Outcome == "" {
			parts = append(parts, "not run")
			continue
		}
		s := fmt.Sprintf("%s %.1fs", o.Outcome, o.Elapsed)
		if o.Why != "" {
			s += " (" + o.Why + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// TestSeriesE2ETests checks, without kcp, what TestRealKCPSeries reads from
// kcp-patches/: the e2e tests each pull request adds or changes, and whose
// must fail on stock kcp. The pin bump's is kcp's regression test (kcpe2e.Regression),
// the watch-cache and identity pull requests' are kcpe2e.WatchCachesApart's
// and IdentityIsolation's; the pin bump's and the identity fix's must fail
// on stock, the race target's and the watch-cache test's need not.
func TestSeriesE2ETests(t *testing.T) {
	prs, err := kcppatches.Load(testfs.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		tests        []string
		failsOnStock bool
	}{
		"pin-bump":                      {kcpe2e.Regression.Tests, true},
		"race-e2e-target":               {kcpe2e.Regression.Tests, false},
		"partial-metadata-watch-caches": {kcpe2e.WatchCachesApart.Tests, false},
		identityFixPR:                   {kcpe2e.IdentityIsolation.Tests, true},
	}
	seen := 0
	for _, pr := range prs {
		tests := seriesE2ETests(pr.Series)
		fails, why := failsOnStock(pr, pr.Series)
		_, name, _ := strings.Cut(pr.Name, "-")
		w, ok := want[name]
		if !ok {
			if len(tests) > 0 {
				t.Errorf("kcp-patches/%s: e2e tests %v, want none", pr.Name, tests)
			}
			continue
		}
		seen++
		var names []string
		for _, tst := range tests {
			if tst.Dir != "test/e2e/conformance" {
				t.Errorf("kcp-patches/%s: %s is not in test/e2e/conformance", pr.Name, tst)
			}
			names = append(names, tst.Name)
		}
		if !slices.Equal(names, w.tests) {
			t.Errorf("kcp-patches/%s: e2e tests %v, want %v", pr.Name, names, w.tests)
		}
		if fails != w.failsOnStock {
			t.Errorf("kcp-patches/%s: fails on stock %t (%s), want %t", pr.Name, fails, why, w.failsOnStock)
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d pull requests with e2e tests in kcp-patches/", seen, len(want))
	}
}
