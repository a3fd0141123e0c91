package kcpe2e

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

// fakeSuite is a package of tests standing in for one of kcp's e2e
// packages: it takes --kcp-kubeconfig as kcp's framework does.
const fakeSuite = `package fake

import (
	"flag"
	"os"
	"testing"
)

var kubeconfig = flag.String("kcp-kubeconfig", "", "")

func TestPass(t *testing.T) {
	if *kubeconfig != "/k/admin.kubeconfig" {
		t.Fatalf("--kcp-kubeconfig = %q", *kubeconfig)
	}
	if os.Getenv("KCP_REPO_DIR") == "" {
		t.Fatal("KCP_REPO_DIR is not set")
	}
	// A test that starts a private kcp must get the one under test.
	if os.Getenv("NO_GORUN") != "1" || os.Getenv("KCP_ASSET_KCP") != "/k/kcp" {
		t.Fatalf("NO_GORUN=%q KCP_ASSET_KCP=%q", os.Getenv("NO_GORUN"), os.Getenv("KCP_ASSET_KCP"))
	}
	t.Run("sub", func(t *testing.T) {})
}

func TestFail(t *testing.T) { t.Fatal("expected failure") }

func TestSkip(t *testing.T) { t.Skip("suite disabled") }

// TestFlaky fails when its marker file does not exist yet, and creates it.
func TestFlaky(t *testing.T) {
	m := os.Getenv("FAKE_FLAKY_MARKER")
	if _, err := os.Stat(m); err != nil {
		os.WriteFile(m, nil, 0o644)
		t.Fatal("first run fails")
	}
}

func TestExit(t *testing.T) { os.Exit(3) }

// TestHang waits to be stopped, as kcp's tests wait on a dead kcp.
func TestHang(t *testing.T) { select {} }
`

func compileFake(t *testing.T) (tree, bin string) {
	t.Helper()
	tree = t.TempDir()
	testfs.WriteTree(t, tree, map[string]string{
		"go.mod":                 "module example.com/fake\n\ngo 1.22\n",
		"test/fake/fake_test.go": fakeSuite,
	})
	p := Package{Dir: "test/fake"}
	bins, err := Compile(context.Background(), tree, filepath.Join(t.TempDir(), "bin"), []Package{p}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return tree, bins[p.Dir]
}

func run(t *testing.T, tree, bin string, p Package) *Result {
	t.Helper()
	res, err := Run(context.Background(), RunOptions{Package: p, Binary: bin, Tree: tree, Kubeconfig: "/k/admin.kubeconfig", KCP: "/k/kcp", Progress: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Run counts each top-level test's outcome (subtests are not counted),
// keeps a failed test's output, retries a RetryOnce package's failed tests
// once and names those that passed then, and calls a binary that dies
// mid-test a failure of that test.
func TestRun(t *testing.T) {
	tree, bin := compileFake(t)

	res := run(t, tree, bin, Package{Dir: "test/fake", Tests: []string{"TestPass", "TestFail", "TestSkip"}})
	if res.Passed != 1 || res.Failed != 1 || res.Skipped != 1 || res.Problem != "" || res.OK() {
		t.Errorf("pass, fail, skip: %s (problem %q)", res.Summary(), res.Problem)
	}
	if got := strings.Join(res.Names(Fail), ","); got != "TestFail" {
		t.Errorf("failed: %s", got)
	}
	for _, tr := range res.Tests {
		if tr.Name == "TestFail" && !strings.Contains(strings.Join(tr.Output, "\n"), "expected failure") {
			t.Errorf("TestFail's output not kept: %q", tr.Output)
		}
	}

	t.Setenv("FAKE_FLAKY_MARKER", filepath.Join(t.TempDir(), "marker"))
	res = run(t, tree, bin, Package{Dir: "test/fake", Tests: []string{"TestFlaky", "TestPass"}, RetryOnce: true, RetryReason: "flaky"})
	if !res.OK() || res.Passed != 2 || !cmp.Equal(res.RetriedPassed, []string{"TestFlaky"}) {
		t.Errorf("retry once: %s, retried %v", res.Summary(), res.RetriedPassed)
	}
	if !strings.Contains(res.Summary(), "passed on retry: TestFlaky") {
		t.Errorf("the summary does not name the retry: %s", res.Summary())
	}

	t.Setenv("FAKE_FLAKY_MARKER", filepath.Join(t.TempDir(), "marker"))
	if res := run(t, tree, bin, Package{Dir: "test/fake", Tests: []string{"TestFlaky"}}); res.Failed != 1 || res.OK() {
		t.Errorf("no retry without RetryOnce: %s", res.Summary())
	}

	if res := run(t, tree, bin, Package{Dir: "test/fake", Tests: []string{"TestExit"}}); res.Failed != 1 || res.OK() {
		t.Errorf("a binary exiting inside a test: %s (problem %q)", res.Summary(), res.Problem)
	}

	if res := run(t, tree, bin, Package{Dir: "test/fake", Tests: []string{"TestNone"}}); res.Passed != 0 || len(res.Tests) != 0 {
		t.Errorf("no matching test: %s", res.Summary())
	}

	// Stopped while a test hangs: what finished before, with the
	// context's error, and the hanging test failed. The stop comes once
	// TestHang's start has been read, as kcp's tests hang mid-run.
	ctx, cancel := context.WithCancel(context.Background())
	o := RunOptions{Package: Package{Dir: "test/fake", Tests: []string{"TestPass", "TestHang"}}, Binary: bin, Tree: tree, Kubeconfig: "/k/admin.kubeconfig", KCP: "/k/kcp",
		Log: writerFunc(func(p []byte) (int, error) {
			if strings.Contains(string(p), "=== RUN   TestHang") {
				cancel()
			}
			return len(p), nil
		})}
	res, err := Run(ctx, o)
	if !errors.Is(err, context.Canceled) || res == nil {
		t.Fatalf("Run stopped: %v, %v", res, err)
	}
	if res.Passed != 1 || res.Failed != 1 || res.Problem == "" || strings.Join(res.Names(Fail), ",") != "TestHang" {
		t.Errorf("Run stopped: %s (problem %q)", res.Summary(), res.Problem)
	}
	for _, tr := range res.Tests {
		if tr.Name == "TestPass" && tr.Finished.IsZero() {
			t.Errorf("TestPass has no finish time")
		}
	}
}

func TestFeatureGates(t *testing.T) {
	tree := t.TempDir()
	testfs.Write(t, filepath.Join(tree, "Makefile"), "SUITES ?=\nTEST_FEATURE_GATES ?= WorkspaceMounts=true,CacheAPIs=true\nPROXY_FEATURE_GATES ?= $(TEST_FEATURE_GATES)\n")
	if got, err := FeatureGates(tree); err != nil || got != "WorkspaceMounts=true,CacheAPIs=true" {
		t.Errorf("FeatureGates = %q, %v", got, err)
	}
	testfs.Write(t, filepath.Join(tree, "Makefile"), "all:\n")
	if _, err := FeatureGates(tree); err == nil || !strings.Contains(err.Error(), "Makefile: no TEST_FEATURE_GATES") {
		t.Errorf("a Makefile without the gates: err = %v", err)
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
