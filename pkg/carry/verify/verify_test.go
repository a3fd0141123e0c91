package verify

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
)

// envNoRace=1 runs TestCarryFailsWithoutAndPassesWith without -race: make
// test's form, whose other builds share the fork's dependencies compiled
// without it (docs/ci.md); make test-race and make verify keep -race.
const envNoRace = "KCP_CARRY_VERIFY_NORACE"

// TestCarryFailsWithoutAndPassesWith is the unit-level positive control: the
// carry's own tests must pass with the series and fail on the pristine fork,
// for the reasons the carry fixes.
func TestCarryFailsWithoutAndPassesWith(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the fork's tests four times")
	}
	root := testfs.RepoRoot(t)
	noRace := os.Getenv(envNoRace) == "1"
	var progress strings.Builder
	report, err := Run(context.Background(), Options{Root: root, Progress: &progress, NoRace: noRace})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	var text strings.Builder
	report.WriteText(&text)
	t.Logf("carry verify:\n%s", text.String())
	if !report.OK() {
		t.Fatalf("the carry is not verified: %v", report.Problems)
	}

	const (
		crdHandler = "k8s.io/apiextensions-apiserver/pkg/apiserver"
		handlers   = "k8s.io/apiserver/pkg/endpoints/handlers"
		cacher     = "k8s.io/apiserver/pkg/storage/cacher"
		toolsCache = "k8s.io/client-go/tools/cache"
	)
	if !slices.Equal(report.Packages, []string{crdHandler, handlers, cacher, toolsCache}) {
		t.Errorf("tested packages = %v, want [%s %s %s %s]", report.Packages, crdHandler, handlers, cacher, toolsCache)
	}
	// The fork's own cacher tests fail on the pristine fork, and tools/cache's
	// whole suite takes minutes: verify runs the detector's tests alone there,
	// and the identity storage's test alone in the CRD handler's package.
	if want := map[string]string{crdHandler: "^TestRemoveDeadStorageKeepsIdentityPartialMetadataStorage$", cacher: "^TestWatchCacheMutationDetector", toolsCache: "^TestMutationDetector"}; !maps.Equal(report.Run, want) {
		t.Errorf("run patterns = %v, want %v", report.Run, want)
	}
	// client-go's two first (the apiserver's 0004 uses 0002's constructor),
	// then the apiserver's four, then apiextensions-apiserver's two (it
	// requires both); the apiserver's 0003 and apiextensions-apiserver's 0001
	// change only tests, so they have nothing to fail without.
	var order []string
	for _, s := range report.Steps {
		order = append(order, s.Module+"/"+s.Patch[:4])
	}
	if want := []string{"k8s.io/client-go/0001", "k8s.io/client-go/0002", "k8s.io/apiserver/0001", "k8s.io/apiserver/0002", "k8s.io/apiserver/0003", "k8s.io/apiserver/0004", "k8s.io/apiextensions-apiserver/0001", "k8s.io/apiextensions-apiserver/0002"}; !slices.Equal(order, want) {
		t.Fatalf("steps = %q, want %q", order, want)
	}
	for i, s := range report.Steps {
		if testOnly := order[i] == "k8s.io/apiserver/0003" || order[i] == "k8s.io/apiextensions-apiserver/0001"; (s.Without == nil) != testOnly {
			t.Errorf("%s: a step without the patch: %v, want one for every patch but the test-only ones", s.Patch, s.Without != nil)
		}
	}
	// step is the step of a patch, by module/number.
	step := func(key string) Step { return report.Steps[slices.Index(order, key)] }
	// A package is tested from the patch that first changes its tests on.
	for key, want := range map[string][]string{
		"k8s.io/client-go/0001":               {toolsCache},
		"k8s.io/client-go/0002":               {toolsCache},
		"k8s.io/apiserver/0001":               {handlers, toolsCache},
		"k8s.io/apiserver/0002":               {handlers, toolsCache},
		"k8s.io/apiserver/0003":               {handlers, cacher, toolsCache},
		"k8s.io/apiserver/0004":               {handlers, cacher, toolsCache},
		"k8s.io/apiextensions-apiserver/0001": {crdHandler, handlers, cacher, toolsCache},
		"k8s.io/apiextensions-apiserver/0002": {crdHandler, handlers, cacher, toolsCache},
	} {
		if got := packagesOf(step(key).With); !slices.Equal(got, want) {
			t.Errorf("with %s: tested %v, want %v", key, got, want)
		}
	}
	// Each patch's tests must fail without it for the reason it fixes, not
	// merely fail. client-go's 0001: a write after the last comparison
	// before the detector stops goes unreported.
	onStop := step("k8s.io/client-go/0001").Without.Packages[0]
	if !slices.Contains(onStop.FailedTests, "TestMutationDetectorReportsWriteBeforeStop") {
		t.Errorf("%s without client-go's 0001: TestMutationDetectorReportsWriteBeforeStop did not fail: %+v", toolsCache, onStop)
	}
	// client-go's 0002 and the apiserver's 0004: their tests use the
	// constructor, the switch and the field they add, so without them they do
	// not compile, for want of those names only.
	for key, name := range map[string]string{"k8s.io/client-go/0002": "NewCacheMutationDetectorWithBackoff", "k8s.io/apiserver/0004": "newWatchCacheMutationDetector"} {
		without := step(key).Without.Packages[0]
		if !without.BuildFailed || !slices.Contains(without.MissingNew, name) {
			t.Errorf("without %s: want tests that lack only what it declares (%s): %+v", key, name, without)
		}
	}
	// The apiserver's 0001: the package's own TestCacheableObject
	// dereferences the missing cluster.
	first := step("k8s.io/apiserver/0001").Without.Packages[0]
	if !slices.Contains(first.FailedTests, "TestCacheableObject") && !strings.Contains(first.Fatal, "nil pointer") {
		t.Errorf("%s without the apiserver's 0001: TestCacheableObject did not fail on the missing cluster: %+v", handlers, first)
	}
	// 0002: typed items get "", the source maps are written, and concurrent
	// requests race (or the runtime aborts them).
	second := step("k8s.io/apiserver/0002").Without.Packages[0]
	for _, test := range []string{
		"TestKCPOriginalAPIVersionAnnotationOnWildcardPartialList",
		"TestKCPOriginalAPIVersionAnnotationOnWildcardPartialObject",
		"TestKCPOriginalAPIVersionAnnotationCopyOnWrite",
	} {
		if !slices.Contains(second.FailedTests, test) {
			t.Errorf("%s without the apiserver's 0002: %s did not fail: %v", handlers, test, second.FailedTests)
		}
	}
	// apiextensions-apiserver's 0002: the identity's storage is torn down on
	// an unrelated CRD's deletion.
	sweep := step("k8s.io/apiextensions-apiserver/0002").Without.Packages[0]
	if !slices.Contains(sweep.FailedTests, "TestRemoveDeadStorageKeepsIdentityPartialMetadataStorage") {
		t.Errorf("%s without apiextensions-apiserver's 0002: TestRemoveDeadStorageKeepsIdentityPartialMetadataStorage did not fail: %+v", crdHandler, sweep)
	}
	if report.Race == noRace {
		t.Errorf("report.Race = %t with %s=%t", report.Race, envNoRace, noRace)
	}
	if noRace {
		// Without -race the writes into the source maps fail the three tests
		// above by assertion; the runtime may or may not catch the
		// concurrent ones.
		return
	}
	// The concurrent requests race (reports), or the runtime aborts the test
	// binary in them with a concurrent map error; either can come first, and
	// an abort can cut the race report it interleaves with.
	if second.Races == 0 && !strings.Contains(second.Fatal, "concurrent map") {
		t.Errorf("%s without the apiserver's 0002: the concurrent requests neither raced nor crashed: %+v", handlers, second)
	}
}

// packagesOf lists the import paths an outcome tested.
func packagesOf(o Outcome) []string {
	var pkgs []string
	for _, p := range o.Packages {
		pkgs = append(pkgs, p.ImportPath)
	}
	return pkgs
}

func TestRunPatterns(t *testing.T) {
	carry := func(runFile string) *carryset.Carry {
		dir := t.TempDir()
		if runFile != "" {
			testfs.Write(t, filepath.Join(dir, RunFile), runFile)
		}
		tests := &series.Patch{Name: "0001-a.patch", Files: []*gitdiff.File{{OldName: "pkg/a/a_test.go", NewName: "pkg/a/a_test.go"}, {NewName: "pkg/b/b.go"}}}
		return &carryset.Carry{Modules: []*carryset.Carried{{Module: "example.com/m", Series: &series.Series{Dir: dir, Patches: []*series.Patch{tests}}}}}
	}
	for name, tc := range map[string]struct {
		runFile string
		want    map[string]string
		err     string
	}{
		"no file":       {},
		"comments only": {runFile: "# nothing\n\n"},
		"a package":     {runFile: "# why\npkg/a ^TestA\n", want: map[string]string{"example.com/m/pkg/a": "^TestA"}},
		"untested":      {runFile: "pkg/b ^TestB\n", err: RunFile + ":1: example.com/m/pkg/b: the series changes no test of this package"},
		"twice":         {runFile: "pkg/a ^TestA\npkg/a ^TestB\n", err: RunFile + ":2: example.com/m/pkg/a named twice"},
		"no pattern":    {runFile: "pkg/a\n", err: RunFile + `:1: want "<package directory> <go test -run pattern>", got "pkg/a"`},
		"not a regexp":  {runFile: "pkg/a ^Test(\n", err: RunFile + ":1: error parsing regexp"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := RunPatterns(carry(tc.runFile))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("RunPatterns = %v, want %v", got, tc.want)
			}
		})
	}
}
