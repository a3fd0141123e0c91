package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcppatches"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/harness/racereport"
)

// EnvKCPMainSource names a kcp main tree (make test-kcp-main's).
const EnvKCPMainSource = "KCP_MAIN_SOURCE"

// unitFix is a kcp pull request of kcp-patches/ that fixes a race in kcp
// with a unit test (docs/races.md), and what that test's race reports name
// on the pristine code.
type unitFix struct {
	dir  string // kcp-patches/2-informer-restmapper-race
	test string
	// frames are what a report must name, each, to count as the race fixed.
	frames []string
}

var unitFixes = []unitFix{
	{dir: "kcp-patches/2-informer-restmapper-race", test: "TestRESTMapperConcurrentWithUpdateInformers", frames: []string{"updateInformers", "(*restMapper)."}},
	{dir: "kcp-patches/3-clustercachedresource-selector-race", test: "TestSetLabelSelectorConcurrentWithReconcile", frames: []string{"(*Controller).SetLabelSelector", "(*Controller).reconcile"}},
}

// unitFixTestTimeout bounds one `go test -race` of a kcp package in a kcp
// tree: a cold build of its dependencies with -race takes minutes on the
// shared machine.
const unitFixTestTimeout = 45 * time.Minute

// TestRealKCPRaceUnitFixes runs each race fix's unit test the way kcp's
// -race unit job would, in each kcp tree given (KCP_SOURCE,
// KCP_MAIN_SOURCE), in the form of the pull request that applies there (kcp
// main's, or a release branch's backport): on a copy with the patch applied
// (git am) it passes; on a pristine copy with only the patch's test file it
// fails with a race report naming the fix's frames.
func TestRealKCPRaceUnitFixes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kcp packages with -race: run without -short")
	}
	testfs.NeedCommands(t, "git")
	for _, fix := range unitFixes {
		pr, err := kcppatches.LoadPR(filepath.Join(testfs.RepoRoot(t), fix.dir))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(pr.Name, func(t *testing.T) {
			for _, env := range []string{EnvKCPSource, EnvKCPMainSource} {
				t.Run(env, func(t *testing.T) { testUnitFix(t, fix, pr, os.Getenv(env), env) })
			}
		})
	}
}

func testUnitFix(t *testing.T, fix unitFix, pr *kcppatches.PR, src, env string) {
	if src == "" {
		t.Skipf("%s is not set: set it to a kcp source tree to run %s's unit test there", env, fix.dir)
	}
	ctx := context.Background()
	// One directory per fix and tree for both runs, kept: outside -trimpath,
	// kcp's own packages are compiled (and cached) by their directory, so a
	// fresh one would compile them again.
	tree := filepath.Join(testfs.RepoRoot(t), ".build", "race-unit-fix", pr.Name, filepath.Base(src))
	if err := kcppatches.ApplyToCopy(ctx, src, tree, []*kcppatches.PR{pr}); err != nil {
		t.Fatal(err)
	}
	form := appliedForm(t, pr, tree)
	pkg := testPackage(t, form)
	out, elapsed, err := goTestRace(ctx, tree, pkg, fix.test)
	if err != nil || !strings.Contains(out, "--- PASS: "+fix.test) {
		t.Fatalf("%s with %s applied: want PASS, got %v after %s:\n%s", fix.test, form.Dir, err, elapsed, tailLines(out, 60))
	}
	t.Logf("%s, %s applied: PASS in %s", src, form.Dir, elapsed)

	// The positive control: the same test on the pristine code.
	if err := kcppatches.ApplyToCopy(ctx, src, tree, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := form.Apply(tree, func(p string) bool { return strings.HasSuffix(p, "_test.go") }); err != nil {
		t.Fatalf("applying the test files of %s to a copy of %s: %v", form.Dir, src, err)
	}
	if carried, err := form.AppliedIn(ctx, tree); err != nil || carried {
		t.Fatalf("%s with only the test files of %s carries the fix: %t, %v", tree, form.Dir, carried, err)
	}
	out, elapsed, err = goTestRace(ctx, tree, pkg, fix.test)
	reps := racereport.ParseString(out)
	var named []racereport.Report
	for _, r := range reps {
		if hasFrames(r, fix.frames) {
			named = append(named, r)
		}
	}
	if err == nil || !strings.Contains(out, "--- FAIL: "+fix.test) || len(named) == 0 {
		t.Fatalf("%s on pristine %s: want FAIL with a race report naming %q, got %v after %s, %d report(s), %d naming them:\n%s", fix.test, src, fix.frames, err, elapsed, len(reps), len(named), tailLines(out, 60))
	}
	keys := map[string]int{}
	for _, r := range reps {
		keys[r.Key()]++
	}
	t.Logf("%s, pristine with the test only: FAIL in %s, %d race report(s), %d naming %q; by key: %v. The first naming them:\n%s", src, elapsed, len(reps), len(named), fix.frames, keys, named[0].Text)
}

// appliedForm is the form of pr (main's or a backport's) that the tree
// carries, as the race phase's judge reads it (testkcp.CarriedFixes).
func appliedForm(t *testing.T, pr *kcppatches.PR, tree string) *series.Series {
	t.Helper()
	form, err := pr.CarriedForm(context.Background(), tree)
	if err != nil {
		t.Fatal(err)
	}
	if form == nil {
		t.Fatalf("%s carries no form of %s after git am", tree, pr.Name)
	}
	return form
}

// testPackage is the kcp package of the test file form adds: ./<its dir>/.
func testPackage(t *testing.T, form *series.Series) string {
	t.Helper()
	for _, p := range form.Patches {
		for _, f := range p.Files {
			if f.IsNew && strings.HasSuffix(f.NewName, "_test.go") {
				return "./" + filepath.Dir(f.NewName) + "/"
			}
		}
	}
	t.Fatalf("%s adds no test file", form.Dir)
	return ""
}

func hasFrames(r racereport.Report, frames []string) bool {
	for _, f := range frames {
		if !r.HasFrame(f) {
			return false
		}
	}
	return true
}

// goTestRace runs one test of a kcp package with -race in the kcp tree dir,
// with kcp's own go.mod (GOWORK=off), and returns its output and how long it
// took.
func goTestRace(ctx context.Context, dir, pkg, test string) (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, unitFixTestTimeout)
	defer cancel()
	// -vet=off: vet is not what is proven, and its facts for every
	// dependency would double a cold run.
	cmd := exec.CommandContext(ctx, "go", "test", "-race", "-vet=off", "-count=1", "-v", "-run", "^"+test+"$", pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=1")
	began := time.Now()
	out, err := cmd.CombinedOutput()
	return string(out), time.Since(began).Round(time.Second), err
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
