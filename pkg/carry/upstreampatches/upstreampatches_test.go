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

	"github.com/bluekeyes/go-gitdiff/gitdiff"
	"golang.org/x/mod/modfile"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
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
	return pr, applyToCopy(t, pr)
}

// applyToCopy applies pr's series to its base in a scratch repository, and
// skips, saying so, where the proxy does not serve the base.
func applyToCopy(t *testing.T, pr *PR) gitexec.Repo {
	t.Helper()
	repo, err := ApplyToCopy(context.Background(), pr, filepath.Join(t.TempDir(), "kubernetes"))
	var fetch *FetchError
	if errors.As(err, &fetch) {
		t.Skipf("the module proxy does not serve %s, so the series cannot be applied to it: %v", fetch.Module, fetch.Err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return repo
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

// envNoRace=1 runs TestUpstreamTestsPassWithAndFailWithout without -race,
// for a quicker look; Kubernetes' unit jobs, make test-upstream and make
// test-race run it with -race.
const envNoRace = "KCP_CARRY_UPSTREAM_NORACE"

// TestUpstreamTestsPassWithAndFailWithout is each Kubernetes pull request's
// presubmit, on its base alone as Kubernetes' CI runs it, and the series'
// in merge order: it compiles and runs the tests each adds, under -race
// (unless envNoRace) as KUBE_RACE=-race does, in the upstream modules with
// their own go.mod files (their dependencies from the module proxy, no
// replace directive) in the workspace kubernetes/kubernetes has, every base
// module at its staging path: they pass with the pull request, and every
// package of them fails with only its test files, by assertion or, for tests
// of what it adds, for want of only that (series.MissingOnly).
func TestUpstreamTestsPassWithAndFailWithout(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the upstream module's package with -race and its dependencies from the module proxy (minutes); -short checks only that the series applies (TestSeriesAppliesUpstream)")
	}
	pr, repo := applyTheSeries(t)
	t.Run("series", func(t *testing.T) { passWithAndFailWithout(t, pr, repo) })
	for _, p := range pr.Series.Patches {
		t.Run(strings.TrimSuffix(p.Name, ".patch"), func(t *testing.T) {
			alone := pr.Alone(p)
			passWithAndFailWithout(t, alone, applyToCopy(t, alone))
		})
	}
}

// passWithAndFailWithout runs the tests pr adds in repo, where its series is
// applied: they pass, and fail with only pr's test files.
func passWithAndFailWithout(t *testing.T, pr *PR, repo gitexec.Repo) {
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
	if !with.ok || len(with.missingNew) > 0 {
		t.Fatalf("the series' tests fail with it:\n%s", with.output)
	}
	if !slices.Equal(with.passed, allTests(tests)) {
		t.Errorf("passed %q, want every test the series adds, %q", with.passed, allTests(tests))
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
	if without.ok {
		t.Fatalf("the series' tests do not fail without it:\n%s", without.output)
	}
	for dir, names := range without.missingNew {
		t.Logf("%s: its tests do not compile without the series, for want of only what it declares: %s", dir, strings.Join(names, ", "))
	}
	for _, m := range pr.Base {
		if len(tests[m.StagingDir()]) == 0 {
			continue
		}
		failed := slices.ContainsFunc(without.failed, func(name string) bool { return slices.Contains(tests[m.StagingDir()], name) })
		if !failed && len(without.missingNew[m.StagingDir()]) == 0 {
			t.Errorf("without the series, no test it adds in %s fails:\n%s", m.StagingDir(), without.output)
		}
	}
	for _, name := range without.failed {
		if !slices.Contains(allTests(tests), name) {
			t.Errorf("without the series, %s fails, which the series does not add:\n%s", name, without.output)
		}
	}
}

// addedTests are the test functions the series adds, sorted, and the
// packages of their files, as module-relative ./ paths, both keyed by the
// module's staging directory.
func addedTests(t *testing.T, pr *PR) (map[string][]string, map[string][]string) {
	t.Helper()
	testFunc := regexp.MustCompile(`^func (Test\w+)\(t \*testing\.T\)`)
	tests := map[string][]string{}
	pkgs := map[string][]string{}
	for _, p := range pr.Series.Patches {
		for _, f := range p.Files {
			if !strings.HasSuffix(f.NewName, "_test.go") {
				continue
			}
			for _, m := range pr.Base {
				rel, ok := strings.CutPrefix(f.NewName, m.StagingDir()+"/")
				if !ok {
					continue
				}
				if pkg := "./" + path.Dir(rel) + "/"; !slices.Contains(pkgs[m.StagingDir()], pkg) {
					pkgs[m.StagingDir()] = append(pkgs[m.StagingDir()], pkg)
				}
				for _, frag := range f.TextFragments {
					for _, l := range frag.Lines {
						if l.Op != gitdiff.OpAdd {
							continue
						}
						if fn := testFunc.FindStringSubmatch(l.Line); fn != nil {
							tests[m.StagingDir()] = append(tests[m.StagingDir()], fn[1])
						}
					}
				}
			}
		}
	}
	if len(tests) == 0 || len(pkgs) == 0 {
		t.Fatalf("the series adds no test function (%q) in a base module (%q)", tests, pkgs)
	}
	for dir := range tests {
		slices.Sort(tests[dir])
	}
	return tests, pkgs
}

// allTests is every test of tests, sorted.
func allTests(tests map[string][]string) []string {
	var all []string
	for _, names := range tests {
		all = append(all, names...)
	}
	slices.Sort(all)
	return all
}

type testRun struct {
	ok             bool
	passed, failed []string
	// missingNew, by staging directory, are the names the series declares
	// whose want alone kept a module's tests from compiling.
	missingNew map[string][]string
	output     string
	// summary is the run's result lines.
	summary string
}

var resultLine = regexp.MustCompile(`(?m)^(--- (PASS|FAIL): (Test\w+).*|(ok|FAIL)\s+\S+.*|FAIL)$`)

// runUpstreamTests runs `go test -race -run <tests>` (without -race with
// envNoRace=1) on pkgs in each module of the scratch repository dir, in its
// workspace.
func runUpstreamTests(t *testing.T, dir string, pr *PR, tests, pkgs map[string][]string) testRun {
	t.Helper()
	r := testRun{ok: true, missingNew: map[string][]string{}}
	for _, m := range pr.Base {
		if len(pkgs[m.StagingDir()]) == 0 {
			continue
		}
		args := []string{"test", "-count=1", "-v", "-run", "^(" + strings.Join(tests[m.StagingDir()], "|") + ")$"}
		env := append(os.Environ(), "GOWORK="+filepath.Join(dir, "go.work"), "GOFLAGS=-trimpath")
		if os.Getenv(envNoRace) != "1" {
			// -race needs cgo, which the suite's own builds turn off.
			args = slices.Insert(args, 1, "-race")
			env = append(env, "CGO_ENABLED=1")
		}
		args = append(args, pkgs[m.StagingDir()]...)
		cmd := exec.CommandContext(t.Context(), "go", args...)
		cmd.Dir = filepath.Join(dir, filepath.FromSlash(m.StagingDir()))
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		r.ok = r.ok && err == nil
		r.output += string(out)
		if err != nil && strings.Contains(string(out), "[build failed]") {
			if missing, ok := series.MissingOnly(strings.Split(string(out), "\n"), pr.Series.Patches...); ok {
				r.missingNew[m.StagingDir()] = missing
			}
		}
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
