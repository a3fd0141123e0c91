package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcpbuild"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcppatches"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/harness/kcpe2e"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// EnvDetectorIdle overrides how long TestRealKCPWatchCacheDetector leaves a
// kcp with the detector alone (default detectorIdle).
const EnvDetectorIdle = "KCP_CARRY_DETECTOR_IDLE"

const detectorIdle = 10 * time.Minute

// deadKCPGrace is how long kcp's tests may go on after kcp died before they
// are stopped: long enough for those that were talking to kcp to fail on
// their own waits (90 s was not: every one was still waiting).
const deadKCPGrace = 5 * time.Minute

// The two builds of kcp the proof compares.
const (
	forkDetector  = "fork+detector"  // the pristine fork and the detector's pull request only
	carryDetector = "carry+detector" // the whole carry
)

// detectorSwitch is which cache mutation detectors kcp and kcp's test
// binaries run with.
type detectorSwitch string

const (
	detectorsOff detectorSwitch = "off"
	// informersOnly is KUBE_CACHE_MUTATION_DETECTOR alone, as kcp's jobs
	// set it today: client-go's informers, not the watch cache.
	informersOnly detectorSwitch = "informers"
	// detectorsOn is both switches: the informers' and the watch cache's.
	detectorsOn detectorSwitch = "on"
)

// detectorPackages are kcp's e2e tests the proof runs, as kcp has them (no
// kcp-patches/): kcpe2e.Subset and kcp's own
// TestBuiltInCrossLogicalClusterListPartialObjectMetadata, whose one
// wildcard partial-metadata LIST is the read that writes the cache.
func detectorPackages() []kcpe2e.Package {
	pkgs := slices.Clone(kcpe2e.Subset)
	for i, p := range pkgs {
		if p.Dir == kcpe2e.Regression.Dir {
			pkgs[i].Tests = append(slices.Clone(p.Tests), kcpe2e.Regression.Tests...)
		}
	}
	return pkgs
}

// detectorRun is one kcp's run: kcp's tests against it, or nothing (idle).
type detectorRun struct {
	Build      string                `json:"build"`
	Detector   detectorSwitch        `json:"detector"`
	Results    []*kcpe2e.Result      `json:"results,omitempty"`
	Wall       time.Duration         `json:"wall"`
	Usage      server.Usage          `json:"kcp"`
	Reports    server.CacheMutations `json:"reports"`
	Workspaces []string              `json:"workspaces,omitempty"`
	// FirstReport is when the detector first reported, after the run began
	// (kcp ready); zero if it never did. Died likewise for kcp's exit.
	FirstReport time.Duration `json:"firstReport,omitempty"`
	Died        time.Duration `json:"died,omitempty"`
	// FirstFailed is the test that failed first, FailedAfter when.
	FirstFailed string        `json:"firstFailed,omitempty"`
	FailedAfter time.Duration `json:"failedAfter,omitempty"`
}

func (r *detectorRun) passed() (passed, failed int) {
	for _, res := range r.Results {
		passed += res.Passed
		failed += res.Failed
		if res.Problem != "" {
			failed++
		}
	}
	return passed, failed
}

func (r *detectorRun) summary() string {
	p, f := r.passed()
	s := fmt.Sprintf("%s, detectors %s: %d passed, %d failed in %s; kcp CPU %s, peak RSS %.2f GiB; %d report(s)",
		r.Build, r.Detector, p, f, r.Wall.Round(time.Second), r.Usage.CPU.Round(time.Second), float64(r.Usage.PeakRSSKiB)/(1<<20), len(r.Reports.Reports))
	if r.FirstReport > 0 {
		s += fmt.Sprintf(", the first after %s", r.FirstReport.Round(time.Second))
	}
	if r.Died > 0 {
		s += fmt.Sprintf("; kcp died after %s (%s)", r.Died.Round(time.Second), r.Reports.Panic)
	}
	if r.FirstFailed != "" {
		s += fmt.Sprintf("; first failure %s after %s", r.FirstFailed, r.FailedAfter.Round(time.Second))
	}
	return s
}

// detectorRecord is what the proof found on one kcp tree, written to
// .build/detector/<tree>/result.json for docs/detector.md.
type detectorRecord struct {
	Tree     string                  `json:"tree"`
	Binaries map[string]string       `json:"binaries"`
	Runs     map[string]*detectorRun `json:"runs"`
	mu       sync.Mutex
}

func (r *detectorRecord) add(name string, run *detectorRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Runs[name] = run
}

// TestRealKCPWatchCacheDetector (make test-detector): the fork's watch cache
// honouring KUBE_CACHE_MUTATION_DETECTOR, on real kcp with kcp's own tests as
// they are, on KCP_SOURCE and KCP_MAIN_SOURCE. kcp is built three ways
// (`carry build --without`): the pristine fork with the detector patch only,
// the whole carry, the carry without the detector. With the detector on:
//
//   - fork+detector/kcp-suite: kcp's tests (detectorPackages) must make the
//     detector report a cached object changed in kcp.io/original-api-version:
//     the bug, caught by a switch kcp's CI already sets (positive control);
//   - fork+detector/idle: kcp and its own controllers alone, with
//     workspaces, for EnvDetectorIdle: what they write by themselves, if
//     anything, is recorded;
//   - carry+detector/kcp-suite: every test passes, no report, kcp alive;
//   - cost: the carried kcp's tests with the detector on and off, twice
//     each, alternating, and the carry without the detector patch: kcp's CPU
//     and peak RSS and the wall time, the on/off ratios beside the ratio of
//     the two runs of one setting (the noise).
func TestRealKCPWatchCacheDetector(t *testing.T) {
	var trees []string
	for _, env := range []string{EnvKCPSource, EnvKCPMainSource} {
		if src := os.Getenv(env); src != "" && !slices.Contains(trees, src) {
			trees = append(trees, src)
		}
	}
	if testing.Short() || len(trees) == 0 {
		t.Skipf("live kcp: set %s (and %s) to kcp trees, without -short", EnvKCPSource, EnvKCPMainSource)
	}
	for _, src := range trees {
		t.Run(filepath.Base(filepath.Clean(src)), func(t *testing.T) { proveDetector(t, src) })
	}
}

func proveDetector(t *testing.T, src string) {
	root := testfs.RepoRoot(t)
	work := filepath.Join(root, ".build", "detector", filepath.Base(filepath.Clean(src)))
	rec := &detectorRecord{Tree: src, Runs: map[string]*detectorRun{}}
	// A run of some subtests (-run .../cost) keeps the other runs' records.
	if data, err := os.ReadFile(filepath.Join(work, "result.json")); err == nil {
		var old detectorRecord
		if json.Unmarshal(data, &old) == nil && old.Runs != nil {
			rec.Runs = old.Runs
		}
	}
	t.Cleanup(func() {
		data, err := json.MarshalIndent(rec, "", "  ")
		if err == nil {
			err = os.WriteFile(filepath.Join(work, "result.json"), data, 0o644)
		}
		if err != nil {
			t.Errorf("writing the record: %v", err)
		}
		t.Logf("record: %s", filepath.Join(work, "result.json"))
	})
	rec.Binaries = buildDetectorVariants(t, root, src, filepath.Join(work, "bin"))

	tree, tests, pkgs := compileDetectorTests(t, src, work)
	suite := func(t *testing.T, name, build string, sw detectorSwitch) *detectorRun {
		r := runDetectorSuite(t, rec.Binaries[build], tree, tests, pkgs, filepath.Join(work, "logs", name), sw)
		r.Build = build
		rec.add(name, r)
		t.Log(r.summary())
		return r
	}

	t.Run(forkDetector+"/kcp-suite", func(t *testing.T) {
		r := suite(t, "fork-detector-suite", forkDetector, detectorsOn)
		if len(r.Reports.Reports) == 0 {
			t.Fatalf("positive control: kcp's tests made no cache mutation report on the pristine fork with the detector on")
		}
		named := 0
		for _, m := range r.Reports.Reports {
			if slices.ContainsFunc(m.Now, func(l string) bool { return strings.Contains(l, `"kcp.io/original-api-version": (string) ""`) }) {
				named++
			}
		}
		if named == 0 {
			t.Errorf("positive control: no report shows kcp.io/original-api-version written; the first: %+v", r.Reports.Reports[0])
		}
		t.Logf("%d of %d reports show kcp.io/original-api-version: \"\" written; the first: %s[%d] %q: %q",
			named, len(r.Reports.Reports), r.Reports.Reports[0].Cache, r.Reports.Reports[0].Index, r.Reports.Reports[0].Object, r.Reports.Reports[0].Now)
	})
	// Which read: kcp's one test that LISTs with partial metadata across
	// workspaces, alone on a fresh kcp, must end in the detector's panic.
	// With the informers' switch alone, as kcp's jobs set it today, the
	// watch cache is not checked: the same read goes unreported.
	t.Run(forkDetector+"/list-test-alone", func(t *testing.T) {
		r := runDetectorSuite(t, rec.Binaries[forkDetector], tree, tests, []kcpe2e.Package{kcpe2e.Regression}, filepath.Join(work, "logs", "fork-detector-list-test"), detectorsOn)
		r.Build = forkDetector
		rec.add("fork-detector-list-test", r)
		t.Log(r.summary())
		if r.Reports.Panic == "" {
			t.Fatalf("%s alone on the pristine fork with the watch cache's detector: no panic of the detector", strings.Join(kcpe2e.Regression.Tests, ", "))
		}
		if !slices.ContainsFunc(r.Reports.Reports, func(m server.CacheMutation) bool { return strings.HasPrefix(m.Cache, "storage/cacher.go:") }) {
			t.Errorf("no report names a watch cache (storage/cacher.go:<resource>): %+v", r.Reports.Reports)
		}
	})
	t.Run(forkDetector+"/list-test-informers-switch", func(t *testing.T) {
		r := runDetectorSuite(t, rec.Binaries[forkDetector], tree, tests, []kcpe2e.Package{kcpe2e.Regression}, filepath.Join(work, "logs", "fork-informers-list-test"), informersOnly)
		r.Build = forkDetector
		rec.add("fork-informers-list-test", r)
		t.Log(r.summary())
		if r.Reports.Panic != "" || len(r.Reports.Reports) > 0 {
			t.Fatalf("with %s alone the watch cache was checked: %s, %d report(s)", server.CacheMutationDetectorOn, r.Reports.Panic, len(r.Reports.Reports))
		}
		if r.Died > 0 {
			t.Fatalf("kcp died with the informers' switch alone")
		}
	})
	t.Run(forkDetector+"/idle", func(t *testing.T) {
		idle := detectorIdle
		if v := os.Getenv(EnvDetectorIdle); v != "" {
			var err error
			if idle, err = time.ParseDuration(v); err != nil {
				t.Fatalf("%s=%s: %v", EnvDetectorIdle, v, err)
			}
		}
		r := runDetectorIdle(t, rec.Binaries[forkDetector], tree, filepath.Join(work, "logs", "fork-detector-idle"), idle)
		r.Build = forkDetector
		rec.add("fork-detector-idle", r)
		t.Log(r.summary())
		for _, m := range r.Reports.Reports {
			t.Logf("report: %s[%d] %q: now %q, stored %q", m.Cache, m.Index, m.Object, m.Now, m.Stored)
		}
	})
	var carried *detectorRun
	t.Run(carryDetector+"/kcp-suite", func(t *testing.T) {
		carried = suite(t, "carry-detector-suite-1", carryDetector, detectorsOn)
		expectDetectorClean(t, carried)
	})
	t.Run("cost", func(t *testing.T) {
		if carried == nil {
			t.Skip("needs carry+detector/kcp-suite's run")
		}
		on := []*detectorRun{carried}
		var off, informers []*detectorRun
		for i := 1; i <= 2; i++ {
			r := suite(t, fmt.Sprintf("carry-detector-off-%d", i), carryDetector, detectorsOff)
			expectDetectorClean(t, r)
			off = append(off, r)
			r = suite(t, fmt.Sprintf("carry-informers-%d", i), carryDetector, informersOnly)
			expectDetectorClean(t, r)
			informers = append(informers, r)
			if i == 2 {
				break
			}
			r = suite(t, "carry-detector-suite-2", carryDetector, detectorsOn)
			expectDetectorClean(t, r)
			on = append(on, r)
		}
		t.Logf("detectors on/off (noise: on/on, off/off):\n%s", costTable(on, off, informers))
	})
}

// detectorFixSpecs are the carry's patches before the detector's fork pull
// request (staging-patches/pull-requests), in each module it starts in, as
// `--without` specs: the fix.
func detectorFixSpecs(t *testing.T, root string) []string {
	fix, _ := detectorSpecs(t, root)
	return fix
}

// detectorSpecs splits the carry at the detector's fork pull request, as
// `--without` specs: the patches before it (the fix) and its own.
func detectorSpecs(t *testing.T, root string) (fix, detector []string) {
	c, err := carryset.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(c.PatchesDir, "pull-requests"))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := series.Lines(data)
	if err != nil {
		t.Fatal(err)
	}
	starts := map[string]string{}
	for _, l := range lines {
		if len(l.Fields) == 2 && l.Fields[0] == "detector" {
			mod, name := path.Split(l.Fields[1])
			starts[strings.TrimSuffix(mod, "/")] = name
		}
	}
	if len(starts) == 0 {
		t.Fatalf("%s/pull-requests names no detector pull request", c.PatchesDir)
	}
	for _, m := range c.Modules {
		start, ok := starts[m.Module]
		in := false
		for _, p := range m.Series.Patches {
			in = in || (ok && p.Name == start)
			if in {
				detector = append(detector, m.Module+"/"+p.Name)
			} else {
				fix = append(fix, m.Module+"/"+p.Name)
			}
		}
		if ok && !in {
			t.Fatalf("the detector pull request starts at %s/%s, which the carry does not have", m.Module, start)
		}
	}
	return fix, detector
}

// compileDetectorTests compiles kcp's tests (detectorPackages) from an
// unmodified copy of src under work/src (a fixed path, so the build cache
// serves the next run).
func compileDetectorTests(t *testing.T, src, work string) (tree string, tests map[string]string, pkgs []kcpe2e.Package) {
	t.Helper()
	tree = filepath.Join(work, "src")
	if err := kcppatches.ApplyToCopy(context.Background(), src, tree, nil); err != nil {
		t.Fatal(err)
	}
	pkgs = detectorPackages()
	log, err := os.Create(filepath.Join(work, "go-test-c.log"))
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	tests, err = kcpe2e.Compile(context.Background(), tree, filepath.Join(work, "tests"), pkgs, log)
	log.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("go test -c of kcp's %d packages: %s", len(pkgs), time.Since(began).Round(time.Second))
	return tree, tests, pkgs
}

// buildDetectorVariants builds cmd/kcp of src two ways into out.
func buildDetectorVariants(t *testing.T, root, src, out string) map[string]string {
	return map[string]string{
		forkDetector:  buildKCPWithout(t, root, src, out, forkDetector, detectorFixSpecs(t, root)),
		carryDetector: buildKCPWithout(t, root, src, out, carryDetector, nil),
	}
}

// buildKCPWithout builds cmd/kcp of src into out with the carry less
// without (`carry build --without`), and returns the binary.
func buildKCPWithout(t *testing.T, root, src, out, name string, without []string) string {
	t.Helper()
	began := time.Now()
	res, err := kcpbuild.Build(context.Background(), kcpbuild.Options{
		Root: root, KCPSource: src, Commands: []string{"cmd/kcp"}, OutDir: out,
		Without: without, Progress: io.Discard,
	})
	if err != nil {
		t.Fatalf("carry build %s (--without %s): %v", name, strings.Join(without, " --without "), err)
	}
	t.Logf("%s: %s (%s, without %v) in %s", name, res.Binaries[0], res.GitVersion, res.Without, time.Since(began).Round(time.Second))
	return res.Binaries[0]
}

// detectorServerEnv is the environment of kcp, and of kcp's test binaries,
// as kcp's CI gives them the switches.
func detectorServerEnv(sw detectorSwitch) []string {
	env := slices.Clone(serverEnv)
	switch sw {
	case detectorsOn:
		return append(env, server.CacheMutationDetectorEnv(true, true)...)
	case informersOnly:
		return append(env, server.CacheMutationDetectorEnv(true, false)...)
	}
	return append(env, server.CacheMutationDetectorEnv(false, false)...)
}

// startDetectorKCP starts kcp for kcp's e2e tests and watches its output for
// the detector's first report and for its exit.
func startDetectorKCP(t *testing.T, bin, tree, logDir string, sw detectorSwitch, args ...string) (s *server.KCP, watch func() (firstReport, died time.Duration), began time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), server.KCPReadyTimeout+time.Minute)
	defer cancel()
	s, err := kcpe2e.StartServer(ctx, kcpe2e.ServerOptions{Binary: bin, RootDir: t.TempDir(), Tree: tree, Env: detectorServerEnv(sw), Args: args, Progress: t.Logf})
	if err != nil {
		t.Fatalf("starting kcp: %v", err)
	}
	began = time.Now()
	var mu sync.Mutex
	var first, died time.Duration
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-s.Done():
				mu.Lock()
				died = time.Since(began)
				mu.Unlock()
				return
			case <-tick.C:
				mu.Lock()
				if first == 0 && strings.Contains(s.Stderr(), "] ALTERED!") {
					first = time.Since(began)
				}
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		_ = s.Stop()
		if err := os.MkdirAll(logDir, 0o755); err == nil {
			_ = os.WriteFile(filepath.Join(logDir, "kcp.log"), []byte(s.Stderr()), 0o644)
		}
	})
	return s, func() (time.Duration, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if first == 0 && strings.Contains(s.Stderr(), "] ALTERED!") {
			first = time.Since(began)
		}
		return first, died
	}, began
}

// runDetectorSuite runs kcp's packages at once against a fresh kcp, as
// TestRealKCPOwnE2E does, and reads what kcp used and reported.
func runDetectorSuite(t *testing.T, bin, tree string, tests map[string]string, pkgs []kcpe2e.Package, logDir string, sw detectorSwitch) *detectorRun {
	t.Helper()
	return runDetectorSuiteWatched(t, bin, tree, tests, pkgs, logDir, sw, nil, nil)
}

// runDetectorSuiteWatched is runDetectorSuite with kcp given args, and
// during, when set, run beside kcp's tests from kcp's start until they end
// (ctx's end), and waited for before kcp is stopped.
func runDetectorSuiteWatched(t *testing.T, bin, tree string, tests map[string]string, pkgs []kcpe2e.Package, logDir string, sw detectorSwitch, args []string, during func(ctx context.Context)) *detectorRun {
	t.Helper()
	s, watch, began := startDetectorKCP(t, bin, tree, logDir, sw, args...)
	duringDone := make(chan struct{})
	duringCtx, endDuring := context.WithCancel(context.Background())
	defer endDuring()
	go func() {
		defer close(duringDone)
		if during != nil {
			during(duringCtx)
		}
	}()
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &detectorRun{Detector: sw, Results: make([]*kcpe2e.Result, len(pkgs))}
	// kcp's tests wait minutes on a dead kcp; once kcp died (the detector's
	// panic), the tests get deadKCPGrace to fail, then they are stopped.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.Done():
		case <-ctx.Done():
			return
		}
		select {
		case <-time.After(deadKCPGrace):
			cancel()
		case <-ctx.Done():
		}
	}()
	var wg sync.WaitGroup
	for i, p := range pkgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log, err := os.Create(filepath.Join(logDir, p.Name()+".log"))
			if err != nil {
				r.Results[i] = &kcpe2e.Result{Package: p.Dir, Problem: err.Error()}
				return
			}
			defer log.Close()
			res, err := kcpe2e.Run(ctx, kcpe2e.RunOptions{
				Package: p, Binary: tests[p.Dir], Tree: tree, Kubeconfig: s.KubeconfigPath(), KCP: bin,
				Parallel: kcpE2EParallel, Timeout: suiteTimeout, Log: log, Env: detectorServerEnv(sw),
			})
			if res == nil {
				res = &kcpe2e.Result{Package: p.Dir, Problem: err.Error()}
			}
			r.Results[i] = res
		}()
	}
	wg.Wait()
	r.Wall = time.Since(began)
	endDuring()
	<-duringDone
	finishDetectorRun(t, r, s, watch, began)
	for _, res := range r.Results {
		for _, tr := range res.Tests {
			if tr.Outcome != kcpe2e.Fail || tr.Finished.IsZero() {
				continue
			}
			if after := tr.Finished.Sub(began); r.FirstFailed == "" || after < r.FailedAfter {
				r.FirstFailed, r.FailedAfter = res.Package+"."+tr.Name, after
			}
		}
	}
	return r
}

// runDetectorIdle starts kcp with the detector on, creates workspaces as
// kcp's e2e tests do (root's universal type), and leaves kcp's own
// controllers alone for idle.
func runDetectorIdle(t *testing.T, bin, tree, logDir string, idle time.Duration) *detectorRun {
	t.Helper()
	s, watch, began := startDetectorKCP(t, bin, tree, logDir, detectorsOn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ws, err := s.CreateWorkspaces(ctx, []string{"e2e-idle-a", "e2e-idle-b", "e2e-idle-c"})
	if err != nil {
		t.Fatalf("creating workspaces: %v", err)
	}
	t.Logf("kcp with the detector and workspaces %s: leaving it alone for %s", strings.Join(ws, ", "), idle)
	r := &detectorRun{Detector: detectorsOn, Workspaces: ws}
	select {
	case <-time.After(idle - time.Since(began)):
	case <-s.Done():
	}
	r.Wall = time.Since(began)
	finishDetectorRun(t, r, s, watch, began)
	return r
}

// finishDetectorRun reads kcp's usage while it runs, then stops it and reads
// the detector's reports from its output.
func finishDetectorRun(t *testing.T, r *detectorRun, s *server.KCP, watch func() (time.Duration, time.Duration), began time.Time) {
	t.Helper()
	if !s.Died() {
		u, err := server.ReadUsage(s.PID())
		if err != nil {
			t.Errorf("reading kcp's usage: %v", err)
		}
		r.Usage = u
	}
	r.FirstReport, r.Died = watch()
	if r.Died == 0 {
		_ = s.Stop()
	}
	r.Reports = server.ParseCacheMutations(s.Stderr())
}

// expectDetectorClean fails unless every test passed, the detector reported
// nothing and kcp lived.
func expectDetectorClean(t *testing.T, r *detectorRun) {
	t.Helper()
	if p, f := r.passed(); f > 0 || p == 0 {
		for _, res := range r.Results {
			if !res.OK() {
				t.Errorf("%s: %s", res.Package, describeFailures(res))
			}
		}
	}
	if len(r.Reports.Reports) > 0 || r.Reports.Panic != "" || r.Died > 0 {
		t.Errorf("%s with the detector: %d report(s), panic %q, died after %s; the first: %+v", r.Build, len(r.Reports.Reports), r.Reports.Panic, r.Died, r.Reports.Reports[:min(1, len(r.Reports.Reports))])
	}
}

// costTable is the markdown table of the cost runs: each run, then the
// on/off ratios of the means with the noise beside them.
func costTable(on, off, informers []*detectorRun) string {
	var b strings.Builder
	fmt.Fprintln(&b, "| run | wall | kcp CPU | kcp peak RSS |")
	fmt.Fprintln(&b, "|---|---|---|---|")
	row := func(name string, r *detectorRun) {
		fmt.Fprintf(&b, "| %s | %.0f s | %.0f s | %.2f GiB |\n", name, r.Wall.Seconds(), r.Usage.CPU.Seconds(), float64(r.Usage.PeakRSSKiB)/(1<<20))
	}
	for i := range max(len(on), len(off), len(informers)) {
		if i < len(off) {
			row(fmt.Sprintf("off (%d)", i+1), off[i])
		}
		if i < len(informers) {
			row(fmt.Sprintf("informers' switch only (%d)", i+1), informers[i])
		}
		if i < len(on) {
			row(fmt.Sprintf("both switches (%d)", i+1), on[i])
		}
	}
	metric := []struct {
		name string
		of   func(*detectorRun) float64
	}{
		{"wall", func(r *detectorRun) float64 { return r.Wall.Seconds() }},
		{"kcp CPU", func(r *detectorRun) float64 { return r.Usage.CPU.Seconds() }},
		{"kcp peak RSS", func(r *detectorRun) float64 { return float64(r.Usage.PeakRSSKiB) }},
	}
	mean := func(rs []*detectorRun, f func(*detectorRun) float64) float64 {
		sum := 0.0
		for _, r := range rs {
			sum += f(r)
		}
		return sum / float64(len(rs))
	}
	ratio := func(a, b float64) string {
		if b == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.3f", a/b)
	}
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| | both/off (means) | informers'/off (means) | on (2)/on (1) | off (2)/off (1) |")
	fmt.Fprintln(&b, "|---|---|---|---|---|")
	for _, m := range metric {
		noiseOn, noiseOff := "n/a", "n/a"
		if len(on) > 1 {
			noiseOn = ratio(m.of(on[1]), m.of(on[0]))
		}
		if len(off) > 1 {
			noiseOff = ratio(m.of(off[1]), m.of(off[0]))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", m.name, ratio(mean(on, m.of), mean(off, m.of)), ratio(mean(informers, m.of), mean(off, m.of)), noiseOn, noiseOff)
	}
	return b.String()
}
