package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcppatches"
	"github.com/kcp-carry/kcp-carry/pkg/harness/kcpe2e"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server/servertest"
)

// kcpE2EParallel is -test.parallel for each of kcp's test packages, which
// run at once against one kcp, as `go test ./test/e2e/...` runs them in kcp's
// CI (three tests each, as its shared e2e job's E2E_PARALLELISM): most of
// their time is spent waiting on kcp.
const kcpE2EParallel = 3

// -test.timeout of kcp's test binaries: a hang fails the run instead of
// holding it. The regression test creates four workspaces and three
// configmaps, makes two wildcard partial-metadata LISTs and reads and
// patches the configmaps: seconds, on carried and stock kcp alike.
const (
	suiteTimeout      = 20 * time.Minute
	regressionTimeout = 3 * time.Minute
)

// emptyAnnotation is what the regression test's failure lines show when a
// read carries the value a stock kcp writes into its watch cache.
const emptyAnnotation = `kcp.io/original-api-version=""`

// TestRealKCPOwnE2E runs kcp's own e2e tests, compiled from KCP_SOURCE with
// the tree's go.mod after `git am` of kcp-patches/ (the regression test the
// carry contributes to kcp's suite), against bin/kcp and bin/kcp-pristine,
// each on a fresh kcp started as kcp's e2e framework expects:
//
//   - kcp-suite: the conformance tests on partial metadata and cross-cluster
//     LISTs, and all of garbagecollector and quota (kcpe2e.Subset). Every one
//     must pass on the carried kcp; on the stock one they are reported only
//     (they pass there too: kcp's suite cannot see the bug).
//   - regression: kcp-patches' test, after the suite on the same kcp. It must
//     pass on the carried kcp and fail on the stock one (positive control),
//     for the bug (a read that carries ""); either kcp must be alive and
//     ready afterwards, as kcp's shared test server must be for the tests
//     beside it.
//   - watch-caches: kcp-patches/5's test (kcpe2e.WatchCachesApart), which
//     pins that a custom resource's wildcard and single-cluster
//     partial-metadata watches get their own answers: it passes on both.
//   - identity: kcp-patches/6's test (kcpe2e.IdentityIsolation): on a tree
//     without that pull request's fix it must fail, for objects of another
//     identity (docs/identity.md), on either kcp; with it, pass.
func TestRealKCPOwnE2E(t *testing.T) {
	src := kcpSource(t, "kcp's own e2e tests are compiled from a kcp source tree: set "+EnvKCPSource)
	bins := prepareKCPE2E(t, src)
	tree, work := bins.tree, bins.dir

	// Each variant's binary is looked up in its own subtest, so that a run
	// of the patched subtests alone (CI's kcp main phase) needs no stock build.
	for _, variant := range []string{"patched", "pristine"} {
		t.Run(variant, func(t *testing.T) {
			bin := kcpBinary(t, variant)
			// Every subtest runs the regression test's package: its test
			// binary compiles while kcp starts.
			bins.start(kcpe2e.Regression)
			s := startKCPForE2E(t, bin, tree)
			logDir := filepath.Join(work, "logs", variant)
			// A subtest per package (kcp-suite/conformance, ...), so that a
			// run can pick some: `make test` skips them on the stock kcp.
			// They are compiled with one go command and run at once.
			t.Run("kcp-suite", func(t *testing.T) {
				bins.start(kcpe2e.Subset...)
				for _, p := range kcpe2e.Subset {
					t.Run(p.Name(), func(t *testing.T) {
						bin := bins.get(t, p)
						t.Parallel()
						res := runKCPTests(t, s, tree, p, bin, logDir, p.Name(), suiteTimeout)
						t.Logf("%s kcp (%s): %s", variant, bin, res.Summary())
						if skipped := res.Names(kcpe2e.Skip); len(skipped) > 0 {
							t.Logf("%s: skipped by kcp's framework: %s", p.Dir, strings.Join(skipped, ", "))
						}
						if variant == "patched" {
							expectAllPassed(t, p, res)
						} else if !res.OK() {
							t.Logf("on the stock kcp too: %s", describeFailures(res))
						}
					})
				}
			})
			t.Run("regression", func(t *testing.T) {
				p := kcpe2e.Regression
				began := time.Now()
				res := runKCPTests(t, s, tree, p, bins.get(t, p), logDir, "regression", regressionTimeout)
				t.Logf("%s kcp (%s): %s; the run took %s (test binary included; -test.timeout=%s)", variant, bin, res.Summary(), time.Since(began).Round(time.Millisecond), regressionTimeout)
				// The test makes one wildcard partial-metadata LIST and reads
				// and patches a few objects: a kcp it leaves dead or unready,
				// carried or stock, is a failure (it shares kcp's test server).
				expectAliveAndReady(t, s)
				if variant == "patched" {
					expectAllPassed(t, p, res)
					return
				}
				if res.Failed != len(p.Tests) {
					t.Errorf("positive control: %s did not fail on the stock kcp (%s)", strings.Join(p.Tests, ", "), res.Summary())
					return
				}
				// It must fail for the bug: a read that carries "", not a timeout.
				found := emptyAnnotationLines(t, filepath.Join(logDir, "regression.log"))
				if len(found) == 0 {
					t.Errorf("positive control: %s failed on the stock kcp, but no read carried %s (not the bug):\n%s", strings.Join(p.Tests, ", "), emptyAnnotation, describeFailures(res))
					return
				}
				t.Logf("positive control: %s fails on the stock kcp as it must, %d reads carry %s; the first:\n%s", strings.Join(p.Tests, ", "), len(found), emptyAnnotation, strings.Join(found[:min(8, len(found))], "\n"))
			})
			// kcp-patches/5's test pins what kcp does today: it passes on
			// both kcps.
			t.Run("watch-caches", func(t *testing.T) {
				p := kcpe2e.WatchCachesApart
				res := runKCPTests(t, s, tree, p, bins.get(t, p), logDir, "watch-caches", regressionTimeout)
				t.Logf("%s kcp (%s): %s", variant, bin, res.Summary())
				expectAllPassed(t, p, res)
			})
			// kcp-patches/6's test fails on a kcp without its fix, for
			// the leak, and passes on one with it.
			t.Run("identity", func(t *testing.T) {
				p := kcpe2e.IdentityIsolation
				fixed := identityFixCarried(t)
				res := runKCPTests(t, s, tree, p, bins.get(t, p), logDir, "identity", regressionTimeout)
				t.Logf("%s kcp (%s): %s", variant, bin, res.Summary())
				if fixed {
					expectAllPassed(t, p, res)
					return
				}
				if res.Failed != len(p.Tests) || !strings.Contains(describeFailures(res), "of another identity") {
					t.Errorf("%s on a kcp without the fix of kcp-patches/*-%s: want it to fail for objects of another identity, got %s", strings.Join(p.Tests, ", "), identityFixPR, describeFailures(res))
					return
				}
				t.Logf("%s fails without the fix, as it must:\n%s", strings.Join(p.Tests, ", "), describeFailures(res))
			})
		})
	}
}

// prepareKCPE2E copies the kcp tree src with kcp-patches/' first pull request
// (the pin bump's: kcp's bump script fixed, and the regression test) applied (git am),
// and the e2e test files of e2eTestPRs, into a fixed directory per tree, ROOT/.build/kcp-e2e/<tree>/src, so that a
// second run finds the test binaries' packages in Go's build cache, and
// returns the compiler of its test binaries. They are compiled when a
// subtest first needs them (or just before), so a run that picks some
// subtests compiles only theirs.
func prepareKCPE2E(t *testing.T, src string) *kcpTestBinaries {
	t.Helper()
	root := testfs.RepoRoot(t)
	prs, err := kcppatches.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	// The pin bump carries the regression test, and those before it only
	// kcp's scripts; the later ones change kcp's own packages (the informer
	// fix), which kcp's e2e test binaries would then compile apart from the
	// stock build's.
	bump := slices.IndexFunc(prs, func(pr *kcppatches.PR) bool {
		_, name, _ := strings.Cut(pr.Name, "-")
		return name == pinBumpPR
	})
	if bump < 0 {
		t.Fatalf("no kcp-patches/<n>-%s among %q", pinBumpPR, kcppatches.Names(prs))
	}
	patches := prs[:bump+1]
	work := filepath.Join(root, ".build", "kcp-e2e", filepath.Base(filepath.Clean(src)))
	tree := filepath.Join(work, "src")
	began := time.Now()
	if err := kcppatches.ApplyToCopy(context.Background(), src, tree, patches); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: applied %s with git am to a copy, %s, in %s", src, strings.Join(kcppatches.Names(patches), ", "), tree, time.Since(began).Round(time.Millisecond))
	// The e2e tests of later pull requests that run here, only their files
	// under test/e2e/: kcp's own code stays the tree's, the code under test.
	for _, pr := range prs[bump+1:] {
		if !slices.ContainsFunc(e2eTestPRs, func(name string) bool { return strings.HasSuffix(pr.Name, "-"+name) }) {
			continue
		}
		n, err := pr.Series.Apply(tree, func(path string) bool { return strings.HasPrefix(path, "test/e2e/") })
		if err != nil || n == 0 {
			t.Fatalf("applying the e2e test files of kcp-patches/%s to %s: %d files, %v", pr.Name, tree, n, err)
		}
		t.Logf("applied the e2e test files of kcp-patches/%s (%d) to %s", pr.Name, n, tree)
	}
	return &kcpTestBinaries{tree: tree, dir: work}
}

// e2eTestPRs are the kcp-patches/<n>-<name> whose e2e tests
// TestRealKCPOwnE2E runs (kcpe2e.WatchCachesApart, IdentityIsolation), by
// name.
var e2eTestPRs = []string{"partial-metadata-watch-caches", identityFixPR}

// pinBumpPR is the kcp-patches/<n>-<name> that bumps kcp's fork pin with the
// regression test.
const pinBumpPR = "pin-bump"

// kcpTestBinaries compiles packages' tests (kcpe2e.Compile, its output in
// dir/go-test-c-<names>.log: the go command's download lines would flood the
// test log) in the background from start, one go command for the packages
// not yet started, and get waits for a package's binary.
type kcpTestBinaries struct {
	tree, dir string

	mu      sync.Mutex
	started map[string]*kcpCompile // by package directory
	last    *kcpCompile            // the go command started last
}

// kcpCompile is one go command's compile of one or more packages.
type kcpCompile struct {
	done    chan struct{}
	names   string
	elapsed time.Duration
	bins    map[string]string
	err     error
}

// start compiles those of pkgs not started before, with one go command, in
// the background, after the go command started before it: two at once would
// compile the packages they share twice. Tests of a package compiled first
// run while the next compiles.
func (b *kcpTestBinaries) start(pkgs ...kcpe2e.Package) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started == nil {
		b.started = map[string]*kcpCompile{}
	}
	c := &kcpCompile{done: make(chan struct{})}
	var todo []kcpe2e.Package
	var names []string
	for _, p := range pkgs {
		if _, ok := b.started[p.Dir]; ok {
			continue
		}
		b.started[p.Dir] = c
		todo = append(todo, p)
		names = append(names, p.Name())
	}
	if len(todo) == 0 {
		return
	}
	c.names = strings.Join(names, ",")
	prev := b.last
	b.last = c
	go func() {
		defer close(c.done)
		if prev != nil {
			<-prev.done
		}
		began := time.Now()
		logPath := filepath.Join(b.dir, "go-test-c-"+strings.Join(names, "-")+".log")
		log, err := os.Create(logPath)
		if err != nil {
			c.err = err
			return
		}
		defer log.Close()
		c.bins, c.err = kcpe2e.Compile(context.Background(), b.tree, filepath.Join(b.dir, "bin"), todo, log)
		c.elapsed = time.Since(began).Round(time.Second)
		if c.err != nil {
			out, _ := os.ReadFile(logPath)
			c.err = fmt.Errorf("%w\n%s", c.err, server.TailLines(string(out), 40))
		}
	}()
}

// get starts p's compile if no start did, and waits for its binary.
func (b *kcpTestBinaries) get(t *testing.T, p kcpe2e.Package) string {
	t.Helper()
	b.start(p)
	b.mu.Lock()
	c := b.started[p.Dir]
	b.mu.Unlock()
	<-c.done
	if c.err != nil {
		t.Fatal(c.err)
	}
	t.Logf("go test -c of %s (the tree's go.mod, one go command): %s", c.names, c.elapsed)
	return c.bins[p.Dir]
}

// startKCPForE2E starts kcp on a new root directory as kcp's e2e framework
// expects it (kcpe2e.StartServer) and stops it at cleanup.
func startKCPForE2E(t *testing.T, bin, tree string) *server.KCP {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), server.KCPReadyTimeout+time.Minute)
	defer cancel()
	s, err := kcpe2e.StartServer(ctx, kcpe2e.ServerOptions{Binary: bin, RootDir: t.TempDir(), Tree: tree, Env: kcpEnv(t, bin), Progress: t.Logf})
	if err != nil {
		t.Fatalf("starting kcp for kcp's e2e tests: %v", err)
	}
	servertest.StopKCPAtCleanup(t, s)
	return s
}

// runKCPTests runs one package's selected tests against s, their output in
// logDir/<logName>.log.
func runKCPTests(t *testing.T, s *server.KCP, tree string, p kcpe2e.Package, bin, logDir, logName string, timeout time.Duration) *kcpe2e.Result {
	t.Helper()
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(logDir, logName+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	res, err := kcpe2e.Run(context.Background(), kcpe2e.RunOptions{
		Package: p, Binary: bin, Tree: tree, Kubeconfig: s.KubeconfigPath(), KCP: s.Binary(),
		Parallel: kcpE2EParallel, Timeout: timeout, Log: log, Progress: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: output in %s", p.Dir, logPath)
	return res
}

// expectAllPassed fails t unless every test ran and passed: the named ones
// each, or at least one of an unnamed package, none failed.
func expectAllPassed(t *testing.T, p kcpe2e.Package, res *kcpe2e.Result) {
	t.Helper()
	if !res.OK() {
		t.Errorf("%s: %s", p.Dir, describeFailures(res))
	}
	if res.Passed == 0 {
		t.Errorf("%s: no test passed (%s)", p.Dir, res.Summary())
	}
	passed := map[string]bool{}
	for _, name := range res.Names(kcpe2e.Pass) {
		passed[name] = true
	}
	for _, name := range p.Tests {
		if !passed[name] {
			t.Errorf("%s: %s did not pass (not run, skipped or failed)", p.Dir, name)
		}
	}
}

func describeFailures(res *kcpe2e.Result) string {
	var b strings.Builder
	b.WriteString(res.Summary())
	for _, tr := range res.Tests {
		if tr.Outcome == kcpe2e.Fail {
			fmt.Fprintf(&b, "\n--- FAIL %s:\n%s", tr.Name, strings.Join(tr.Output, "\n"))
		}
	}
	if res.Problem != "" {
		b.WriteString("\n" + res.Problem)
	}
	return b.String()
}

// expectAliveAndReady fails t unless s is running and answers /readyz.
func expectAliveAndReady(t *testing.T, s *server.KCP) {
	t.Helper()
	if s.Died() {
		t.Errorf("kcp died: %v\n%s", s.ExitError(), server.TailLines(s.Stderr(), 40))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := server.Readyz(ctx, s.Config()); err != nil {
		t.Errorf("kcp is not ready after the regression test: %v", err)
		return
	}
	t.Logf("kcp (pid %d) is alive and ready after the regression test", s.PID())
}

// emptyAnnotationLines are the lines of the test log at path that report a
// read carrying emptyAnnotation.
func emptyAnnotationLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, emptyAnnotation) {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return lines
}
