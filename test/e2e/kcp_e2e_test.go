package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcppatches"
	"github.com/kcp-carry/kcp-carry/pkg/harness/kcpe2e"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server/servertest"
)

// kcpE2EParallel is -test.parallel for kcp's tests: their own default is
// GOMAXPROCS, 2 here, and most of their time is spent waiting on kcp.
const kcpE2EParallel = 4

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
func TestRealKCPOwnE2E(t *testing.T) {
	src := kcpSource(t, "kcp's own e2e tests are compiled from a kcp source tree: set "+EnvKCPSource)
	bins := prepareKCPE2E(t, src)
	tree, work := bins.tree, bins.dir

	// Each variant's binary is looked up in its own subtest, so that a run
	// of the patched subtests alone (CI's kcp main phase) needs no stock build.
	for _, variant := range []string{"patched", "pristine"} {
		t.Run(variant, func(t *testing.T) {
			bin := kcpBinary(t, variant)
			s := startKCPForE2E(t, bin, tree)
			logDir := filepath.Join(work, "logs", variant)
			// A subtest per package (kcp-suite/conformance, ...), so that a
			// run can pick some: `make test` skips them on the stock kcp.
			t.Run("kcp-suite", func(t *testing.T) {
				for _, p := range kcpe2e.Subset {
					t.Run(p.Name(), func(t *testing.T) {
						res := runKCPTests(t, s, tree, p, bins.get(t, p), logDir, p.Name(), suiteTimeout)
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
		})
	}
}

// prepareKCPE2E copies the kcp tree src with kcp-patches/' first pull request
// (the pin bump's regression test) applied (git am)
// into a fixed directory per tree, ROOT/.build/kcp-e2e/<tree>/src, so that a
// second run finds the test binaries' packages in Go's build cache, and
// returns the compiler of its test binaries. They are compiled when a
// subtest first needs them, so a run that picks some subtests compiles only
// theirs.
func prepareKCPE2E(t *testing.T, src string) *kcpTestBinaries {
	t.Helper()
	root := testfs.RepoRoot(t)
	prs, err := kcppatches.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	// The first pull request carries the regression test; the later ones
	// change kcp's own packages (the informer fix), which kcp's e2e test
	// binaries would then compile apart from the stock build's.
	patches := prs[:1]
	work := filepath.Join(root, ".build", "kcp-e2e", filepath.Base(filepath.Clean(src)))
	tree := filepath.Join(work, "src")
	began := time.Now()
	if err := kcppatches.ApplyToCopy(context.Background(), src, tree, patches); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: applied %s with git am to a copy, %s, in %s", src, strings.Join(kcppatches.Names(patches), ", "), tree, time.Since(began).Round(time.Millisecond))
	return &kcpTestBinaries{tree: tree, dir: work}
}

// kcpTestBinaries compiles a package's tests on first use (kcpe2e.Compile,
// its output in dir/go-test-c-<name>.log: the go command's download lines
// would flood the test log).
type kcpTestBinaries struct {
	tree, dir string
	bins      map[string]string
}

func (b *kcpTestBinaries) get(t *testing.T, p kcpe2e.Package) string {
	t.Helper()
	if bin, ok := b.bins[p.Dir]; ok {
		return bin
	}
	logPath := filepath.Join(b.dir, "go-test-c-"+p.Name()+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	began := time.Now()
	bins, err := kcpe2e.Compile(context.Background(), b.tree, filepath.Join(b.dir, "bin"), []kcpe2e.Package{p}, log)
	if err != nil {
		out, _ := os.ReadFile(logPath)
		t.Fatalf("%v\n%s", err, server.TailLines(string(out), 40))
	}
	t.Logf("go test -c ./%s (the tree's go.mod): %s", p.Dir, time.Since(began).Round(time.Second))
	if b.bins == nil {
		b.bins = map[string]string{}
	}
	b.bins[p.Dir] = bins[p.Dir]
	return bins[p.Dir]
}

// startKCPForE2E starts kcp on a new root directory as kcp's e2e framework
// expects it (kcpe2e.StartServer) and stops it at cleanup.
func startKCPForE2E(t *testing.T, bin, tree string) *server.KCP {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), server.KCPReadyTimeout+time.Minute)
	defer cancel()
	s, err := kcpe2e.StartServer(ctx, kcpe2e.ServerOptions{Binary: bin, RootDir: t.TempDir(), Tree: tree, Env: serverEnv, Progress: t.Logf})
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
		t.Errorf("%s on the carried kcp: %s", p.Dir, describeFailures(res))
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
