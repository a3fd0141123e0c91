package verify

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/pkg/util/reporoot"
)

// TestCarryFailsWithoutAndPassesWith is the unit-level positive control: the
// carry's own tests must pass with the series and fail on the pristine fork,
// for the reasons the carry fixes.
func TestCarryFailsWithoutAndPassesWith(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the fork's tests under -race twice")
	}
	root, err := reporoot.Find(".")
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	report, err := Run(context.Background(), Options{Root: root, Progress: &progress})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	var text strings.Builder
	report.WriteText(&text)
	t.Logf("carry verify:\n%s", text.String())
	if !report.OK() {
		t.Fatalf("the carry is not verified: %v", report.Problems)
	}

	want := []string{"k8s.io/apiserver/pkg/endpoints/handlers"}
	if !slices.Equal(report.Packages, want) {
		t.Errorf("tested packages = %v, want %v", report.Packages, want)
	}
	// Each package must fail on the pristine fork for the reason the carry
	// fixes, not merely fail.
	for _, p := range report.TestsOnly.Packages {
		switch p.ImportPath {
		case "k8s.io/apiserver/pkg/endpoints/handlers":
			for _, test := range []string{
				"TestKCPOriginalAPIVersionAnnotationOnWildcardPartialList",
				"TestKCPOriginalAPIVersionAnnotationOnWildcardPartialObject",
				"TestKCPOriginalAPIVersionAnnotationOnlyOnWildcardRequests",
				"TestKCPOriginalAPIVersionAnnotationCopyOnWrite",
				"TestKCPOriginalAPIVersionAnnotationConcurrentWildcardRequests",
			} {
				if !slices.Contains(p.FailedTests, test) {
					t.Errorf("%s: %s did not fail on the pristine fork: %v", p.ImportPath, test, p.FailedTests)
				}
			}
			// The concurrent test's child reports races, or the runtime
			// aborts it with a fatal concurrent map error; its output is in
			// the parent's.
			if p.Races == 0 && !strings.Contains(p.Fatal, "concurrent map") {
				t.Errorf("%s: neither a race report nor a concurrent map crash on the pristine fork: %+v", p.ImportPath, p)
			}
		}
	}
}
