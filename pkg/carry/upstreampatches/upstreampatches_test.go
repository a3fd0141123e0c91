package upstreampatches

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/util/gitexec"
)

// applyTheSeries applies the repository's upstream-patches/kubernetes to its
// base modules, fetched through the module proxy, in a scratch repository.
// It skips, saying so, where the proxy does not serve them.
func applyTheSeries(t *testing.T) (*PR, gitexec.Repo) {
	t.Helper()
	testfs.NeedCommands(t, "git", "go")
	pr, err := Load(testfs.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if pr == nil {
		t.Fatalf("no %s/ in the repository", Dir)
	}
	repo, err := ApplyToCopy(context.Background(), pr, filepath.Join(t.TempDir(), "kubernetes"))
	var fetch *FetchError
	if errors.As(err, &fetch) {
		t.Skipf("the module proxy does not serve %s, so the series cannot be applied to it: %v", fetch.Module, fetch.Err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return pr, repo
}

// TestSeriesAppliesUpstream: the series applies with git am to the upstream
// modules it is cut on, laid out at their staging paths, and its files lie
// in those modules.
func TestSeriesAppliesUpstream(t *testing.T) {
	pr, repo := applyTheSeries(t)
	if len(pr.TestFiles()) == 0 || len(pr.ChangedFiles()) == 0 {
		t.Fatalf("the series changes %q and tests %q: want a change and its tests", pr.ChangedFiles(), pr.TestFiles())
	}
	for _, f := range append(pr.ChangedFiles(), pr.TestFiles()...) {
		if !slices.ContainsFunc(pr.Base, func(m Module) bool { return strings.HasPrefix(f, m.StagingDir()+"/") }) {
			t.Errorf("%s lies in none of the base modules' staging directories", f)
		}
		if _, err := os.Stat(filepath.Join(repo.Dir, filepath.FromSlash(f))); err != nil {
			t.Errorf("after git am: %v", err)
		}
	}
	out, err := repo.Run(context.Background(), "rev-list", "--count", BaseTag+"..HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(out)), len(pr.Series.Patches); got != strconv.Itoa(want) {
		t.Errorf("git am made %s commits, want %d", got, want)
	}
}

// envNoRace=1 runs TestUpstreamTestsPassWithAndFailWithout without -race:
// make test's form, which builds nothing with -race (docs/ci.md); make
// test-race keeps -race.
const envNoRace = "KCP_CARRY_UPSTREAM_NORACE"

// TestUpstreamTestsPassWithAndFailWithout compiles and runs the tests the
// series adds, under -race (unless envNoRace), in the upstream module with
// its own go.mod (its dependencies from the module proxy, no replace
// directive, no go.work): they pass with the series, and some of them fail
// with only its test files.
func TestUpstreamTestsPassWithAndFailWithout(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the upstream module's package with -race and its dependencies from the module proxy (minutes); -short checks only that the series applies (TestSeriesAppliesUpstream)")
	}
	pr, repo := applyTheSeries(t)
	tests, pkgs := addedTests(t, pr)
	for _, m := range pr.Base {
		gomod := filepath.Join(repo.Dir, filepath.FromSlash(m.StagingDir()), "go.mod")
		f, err := modfile.Parse(gomod, []byte(testfs.Read(t, gomod)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Replace) > 0 {
			t.Fatalf("%s has replace directives (%s ...): the tests must run on upstream's dependencies", gomod, f.Replace[0].Old.Path)
		}
	}

	with := runUpstreamTests(t, repo.Dir, pr, tests, pkgs)
	t.Logf("with the series:\n%s", with.summary)
	if !with.ok {
		t.Fatalf("the series' tests fail with it:\n%s", with.output)
	}
	if !slices.Equal(with.passed, tests) {
		t.Errorf("passed %q, want every test the series adds, %q", with.passed, tests)
	}

	// Only the test files: the other changes back at the base.
	for _, f := range pr.ChangedFiles() {
		if _, err := repo.Run(context.Background(), "checkout", BaseTag, "--", f); err != nil {
			if _, err := repo.Run(context.Background(), "rm", "-q", "--", f); err != nil {
				t.Fatal(err)
			}
		}
	}
	without := runUpstreamTests(t, repo.Dir, pr, tests, pkgs)
	t.Logf("with only its tests:\n%s", without.summary)
	if without.ok || len(without.failed) == 0 {
		t.Fatalf("the series' tests do not fail without it:\n%s", without.output)
	}
	for _, name := range without.failed {
		if !slices.Contains(tests, name) {
			t.Errorf("without the series, %s fails, which the series does not add:\n%s", name, without.output)
		}
	}
}

// addedTests are the test functions the series adds, sorted, and the
// packages of their files, as module-relative ./ paths keyed by the module's
// staging directory.
func addedTests(t *testing.T, pr *PR) ([]string, map[string][]string) {
	t.Helper()
	testFunc := regexp.MustCompile(`(?m)^\+func (Test\w+)\(t \*testing\.T\)`)
	var tests []string
	for _, p := range pr.Series.Patches {
		for _, m := range testFunc.FindAllStringSubmatch(string(p.Data), -1) {
			tests = append(tests, m[1])
		}
	}
	pkgs := map[string][]string{}
	for _, f := range pr.TestFiles() {
		for _, m := range pr.Base {
			if rel, ok := strings.CutPrefix(f, m.StagingDir()+"/"); ok {
				if pkg := "./" + path.Dir(rel) + "/"; !slices.Contains(pkgs[m.StagingDir()], pkg) {
					pkgs[m.StagingDir()] = append(pkgs[m.StagingDir()], pkg)
				}
			}
		}
	}
	if len(tests) == 0 || len(pkgs) == 0 {
		t.Fatalf("the series adds no test function (%q) in a base module (%q)", tests, pkgs)
	}
	slices.Sort(tests)
	return tests, pkgs
}

type testRun struct {
	ok             bool
	passed, failed []string
	output         string
	// summary is the run's result lines.
	summary string
}

var resultLine = regexp.MustCompile(`(?m)^(--- (PASS|FAIL): (Test\w+).*|(ok|FAIL)\s+\S+.*|FAIL)$`)

// runUpstreamTests runs `go test -race -run <tests>` (without -race with
// envNoRace=1) on pkgs in each module of the scratch repository dir, as the
// upstream module builds itself.
func runUpstreamTests(t *testing.T, dir string, pr *PR, tests []string, pkgs map[string][]string) testRun {
	t.Helper()
	var r testRun
	r.ok = true
	for _, m := range pr.Base {
		if len(pkgs[m.StagingDir()]) == 0 {
			continue
		}
		args := []string{"test", "-race", "-count=1", "-v", "-run", "^(" + strings.Join(tests, "|") + ")$"}
		if os.Getenv(envNoRace) == "1" {
			args = slices.Delete(args, 1, 2)
		}
		args = append(args, pkgs[m.StagingDir()]...)
		cmd := exec.CommandContext(t.Context(), "go", args...)
		cmd.Dir = filepath.Join(dir, filepath.FromSlash(m.StagingDir()))
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		r.ok = r.ok && err == nil
		r.output += string(out)
		for _, l := range resultLine.FindAllStringSubmatch(string(out), -1) {
			r.summary += l[0] + "\n"
			switch l[2] {
			case "PASS":
				r.passed = append(r.passed, l[3])
			case "FAIL":
				r.failed = append(r.failed, l[3])
			}
		}
	}
	slices.Sort(r.passed)
	slices.Sort(r.failed)
	return r
}

// TestLoadRefuses: a base line that is not <module> <version> <h1: hash>, a
// module named twice, and a subject in the fork's UPSTREAM: convention are
// errors naming the file and line; no upstream-patches/ is no pull request.
func TestLoadRefuses(t *testing.T) {
	root := t.TempDir()
	if pr, err := Load(root); pr != nil || err != nil {
		t.Fatalf("no %s/: %v, %v", Dir, pr, err)
	}
	dir := filepath.Join(root, Dir, Kubernetes)
	patch := "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\nDate: Thu, 1 Jan 2026 00:00:00 +0000\nSubject: [PATCH] UPSTREAM: <carry>: cacher: x\n\nx\n---\ndiff --git a/x.go b/x.go\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/x.go\n@@ -0,0 +1 @@\n+package x\n"
	testfs.WriteTree(t, dir, map[string]string{
		"series":       "0001-x.patch\n",
		"0001-x.patch": patch,
		BaseFile:       "k8s.io/apiserver v0.37.2\nk8s.io/apiserver v0.37.2 h1:x=\nk8s.io/apiserver v0.37.2 h1:y=\nnot/a/module/ v1 h1:z=\n",
	})
	_, err := Load(root)
	if err == nil || !strings.Contains(err.Error(), "Kubernetes' commits do not use the fork's UPSTREAM: convention") {
		t.Errorf("an UPSTREAM: subject: %v", err)
	}
	testfs.Write(t, filepath.Join(dir, "0001-x.patch"), strings.Replace(patch, "UPSTREAM: <carry>: cacher: x", "cacher: x", 1))
	_, err = Load(root)
	base := filepath.Join(dir, BaseFile)
	for _, want := range []string{base + ":1: want <module path> <version> <h1: hash of its zip>", base + ":3: k8s.io/apiserver named twice", base + ":4: "} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad base: %v, want %q", err, want)
		}
	}
	testfs.Write(t, base, "k8s.io/apiserver v0.37.2 h1:x=\n")
	pr, err := Load(root)
	if err != nil || len(pr.Base) != 1 || pr.Base[0].StagingDir() != "staging/src/k8s.io/apiserver" || pr.Base[0].String() != "k8s.io/apiserver@v0.37.2" {
		t.Errorf("good base: %+v, %v", pr, err)
	}
}
