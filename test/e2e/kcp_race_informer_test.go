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

// informerFix is the kcp patch that fixes the race on the REST mapper of
// kcp's discovering informer factory (docs/races.md), and informerFixTest
// the unit test it adds to kcp's pkg/informer.
const (
	informerFix     = "kcp-patches/2-informer-restmapper-race"
	informerFixTest = "TestRESTMapperConcurrentWithUpdateInformers"
)

// informerTestTimeout bounds one `go test -race ./pkg/informer/` in a kcp
// tree: a cold build of its dependencies with -race takes minutes on the
// shared machine.
const informerTestTimeout = 45 * time.Minute

// TestRealKCPRaceInformerFix runs the informer fix's unit test the way kcp's
// -race unit job would, in each kcp tree given (KCP_SOURCE, KCP_MAIN_SOURCE):
// on a copy with the patch applied (git am) it passes; on a pristine copy
// with only the patch's test file it fails with a race report naming
// updateInformers and the REST mapper's method.
func TestRealKCPRaceInformerFix(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kcp's pkg/informer with -race: run without -short")
	}
	testfs.NeedCommands(t, "git")
	fix, err := series.LoadChecked(filepath.Join(testfs.RepoRoot(t), informerFix), kcppatches.CheckSubject)
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{EnvKCPSource, EnvKCPMainSource} {
		t.Run(env, func(t *testing.T) {
			src := os.Getenv(env)
			if src == "" {
				t.Skipf("%s is not set: set it to a kcp source tree to run %s's unit test there", env, informerFix)
			}
			ctx := context.Background()
			// One directory per tree for both runs, kept: outside -trimpath,
			// kcp's own packages are compiled (and cached) by their
			// directory, so a fresh one would compile them again.
			tree := filepath.Join(testfs.RepoRoot(t), ".build", "informer-fix", filepath.Base(src))
			if err := kcppatches.ApplyToCopy(ctx, src, tree, []*kcppatches.PR{{Name: filepath.Base(informerFix), Series: fix}}); err != nil {
				t.Fatal(err)
			}
			expectCarries(t, fix, tree, true)
			out, elapsed, err := goTestRace(ctx, tree, "./pkg/informer/", informerFixTest)
			if err != nil || !strings.Contains(out, "--- PASS: "+informerFixTest) {
				t.Fatalf("%s with %s applied: want PASS, got %v after %s:\n%s", informerFixTest, informerFix, err, elapsed, tailLines(out, 60))
			}
			t.Logf("%s, %s applied: PASS in %s", src, informerFix, elapsed)

			// The positive control: the same test on the pristine code.
			if err := kcppatches.ApplyToCopy(ctx, src, tree, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := fix.Apply(tree, func(p string) bool { return strings.HasSuffix(p, "_test.go") }); err != nil {
				t.Fatalf("applying the test files of %s to a copy of %s: %v", informerFix, src, err)
			}
			expectCarries(t, fix, tree, false)
			out, elapsed, err = goTestRace(ctx, tree, "./pkg/informer/", informerFixTest)
			reps := racereport.ParseString(out)
			var named []racereport.Report
			for _, r := range reps {
				if r.HasFrame("updateInformers") && r.HasFrame("(*restMapper).") {
					named = append(named, r)
				}
			}
			if err == nil || !strings.Contains(out, "--- FAIL: "+informerFixTest) || len(named) == 0 {
				t.Fatalf("%s on pristine %s: want FAIL with a race report naming updateInformers and the REST mapper, got %v after %s, %d report(s), %d naming both:\n%s", informerFixTest, src, err, elapsed, len(reps), len(named), tailLines(out, 60))
			}
			keys := map[string]int{}
			for _, r := range reps {
				keys[r.Key()]++
			}
			t.Logf("%s, pristine with the test only: FAIL in %s, %d race report(s), %d naming updateInformers and the REST mapper; by key: %v. The first naming both:\n%s", src, elapsed, len(reps), len(named), keys, named[0].Text)
		})
	}
}

// expectCarries checks what the race phase's judge reads of a kcp tree
// (testkcp.CarriedFixes): whether it carries the fix.
func expectCarries(t *testing.T, fix *series.Series, tree string, want bool) {
	t.Helper()
	got, err := fix.AppliedIn(context.Background(), tree)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("%s carries %s: %t, want %t", tree, informerFix, got, want)
	}
}

// goTestRace runs one test of a kcp package with -race in the kcp tree dir,
// with kcp's own go.mod (GOWORK=off), and returns its output and how long it
// took.
func goTestRace(ctx context.Context, dir, pkg, test string) (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, informerTestTimeout)
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
