package verify

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
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

	const handlers = "k8s.io/apiserver/pkg/endpoints/handlers"
	if !slices.Equal(report.Packages, []string{handlers}) {
		t.Errorf("tested packages = %v, want [%s]", report.Packages, handlers)
	}
	if len(report.Steps) != 2 || report.Steps[0].Without == nil || report.Steps[1].Without == nil {
		t.Fatalf("want two steps, each with tests that must fail without it: %+v", report.Steps)
	}
	// Each patch's tests must fail without it for the reason it fixes, not
	// merely fail. 0001: the package's own TestCacheableObject dereferences
	// the missing cluster.
	first := report.Steps[0].Without.Packages[0]
	if !slices.Contains(first.FailedTests, "TestCacheableObject") && !strings.Contains(first.Fatal, "nil pointer") {
		t.Errorf("%s without %s: TestCacheableObject did not fail on the missing cluster: %+v", handlers, report.Steps[0].Patch, first)
	}
	// 0002: typed items get "", the source maps are written, and concurrent
	// requests race (or the runtime aborts them).
	second := report.Steps[1].Without.Packages[0]
	for _, test := range []string{
		"TestKCPOriginalAPIVersionAnnotationOnWildcardPartialList",
		"TestKCPOriginalAPIVersionAnnotationOnWildcardPartialObject",
		"TestKCPOriginalAPIVersionAnnotationCopyOnWrite",
	} {
		if !slices.Contains(second.FailedTests, test) {
			t.Errorf("%s without %s: %s did not fail: %v", handlers, report.Steps[1].Patch, test, second.FailedTests)
		}
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
		t.Errorf("%s without %s: the concurrent requests neither raced nor crashed: %+v", handlers, report.Steps[1].Patch, second)
	}
}
