package export

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/carry/verify"
	"github.com/kcp-carry/kcp-carry/pkg/util/markdown"
)

func TestMarkdownHelpers(t *testing.T) {
	if got := markdown.CodeSpan("UPSTREAM: <carry>: x"); got != "`UPSTREAM: <carry>: x`" {
		t.Errorf("codeSpan = %q", got)
	}
	if got := markdown.CodeSpan("a `b` c"); got != "``a `b` c``" {
		t.Errorf("codeSpan with ticks = %q", got)
	}
	if got := markdown.Fence("json", "{}\n```\n"); got != "````json\n{}\n```\n\n````" {
		t.Errorf("fence = %q", got)
	}
}

// testCarry is a carry whose tests live in the two packages the real one tests.
func testCarry() map[string]*series.Series {
	return map[string]*series.Series{
		"k8s.io/apimachinery": {Hash: "h1:machinery", Patches: []*series.Patch{{Files: []*gitdiff.File{{NewName: "pkg/api/meta/meta_test.go"}}}}},
		"k8s.io/apiserver":    {Hash: "h1:server", Patches: []*series.Patch{{Files: []*gitdiff.File{{NewName: "pkg/endpoints/handlers/response_kcp_test.go"}}}}},
	}
}

func verifyReport(pkgs ...string) *verify.Report {
	r := &verify.Report{Series: verify.SeriesHashes(testCarry()), Packages: pkgs}
	step := verify.Step{Module: "k8s.io/apiserver", Patch: "0001-fix.patch", Without: &verify.Outcome{Name: "before 0001-fix.patch, with its tests"}, With: verify.Outcome{Name: "with 0001-fix.patch"}}
	for _, p := range pkgs {
		step.With.Packages = append(step.With.Packages, verify.PackageOutcome{ImportPath: p, Passed: true})
		step.Without.Packages = append(step.Without.Packages, verify.PackageOutcome{ImportPath: p, FailedTests: []string{"TestOwned"}, Races: 3, Fatal: "fatal error: concurrent map writes"})
	}
	r.Steps = []verify.Step{step}
	return r
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	testfs.Write(t, path, string(data))
}

func TestReadVerifyReport(t *testing.T) {
	dir := t.TempDir()
	pkgs := []string{"k8s.io/apimachinery/pkg/api/meta", "k8s.io/apiserver/pkg/endpoints/handlers"}
	good := filepath.Join(dir, "good.json")
	writeJSONFile(t, good, verifyReport(pkgs...))
	carry := testCarry()
	if r, err := readVerifyReport(good, carry); err != nil || !r.OK() {
		t.Fatalf("good report: %v", err)
	}

	otherCarry := verifyReport(pkgs...)
	otherCarry.Series["k8s.io/apiserver"] = "h1:older"
	notOK := verifyReport(pkgs...)
	notOK.Problems = []string{"k8s.io/apimachinery/pkg/api/meta: the carry's tests pass on the pristine fork: they do not catch the bug"}
	cases := map[string]struct {
		content any
		want    string
	}{
		"not json":     {"not json", "not a `carry verify --json` report"},
		"other report": {map[string]any{"target": "https://127.0.0.1", "verdict": "clean"}, `not a ` + "`carry verify --json`" + ` report: json: unknown field "target"`},
		"empty":        {map[string]any{"packages": []string{}}, "it has no package results"},
		"stale":        {verifyReport(pkgs[0]), "covers k8s.io/apimachinery/pkg/api/meta, but the carry's tests are in " + strings.Join(pkgs, " ")},
		"other carry":  {otherCarry, "verified another version of the carry"},
		"not verified": {notOK, "the carry is NOT verified: k8s.io/apimachinery/pkg/api/meta: the carry's tests pass on the pristine fork"},
	}
	for name, c := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		if s, ok := c.content.(string); ok {
			testfs.Write(t, path, s)
		} else {
			writeJSONFile(t, path, c.content)
		}
		if _, err := readVerifyReport(path, carry); err == nil || !strings.Contains(err.Error(), "--verify-report "+path+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// TestExportVerifyReport: with a verify report, PR.md quotes how the fix's
// tests fail without it (the step of its last patch), and nothing more of
// the run; a report that is not verified stops the export before anything
// is written.
func TestExportVerifyReport(t *testing.T) {
	root := stagingFixture(t)
	addKCPPRs(t, root, "1-pin-bump")
	pkgs := []string{"example.com/aserver/handlers", "example.com/zmachinery/meta"}
	report := filepath.Join(t.TempDir(), "verify.json")
	saved := verifyReport(pkgs...)
	saved.Series = seriesHashes(t, root)
	// The step PR.md quotes is that of the fix's last patch.
	saved.Steps[0].Module, saved.Steps[0].Patch = "example.com/aserver", "0002-UPSTREAM-carry-handlers-edit-serve.patch"
	writeJSONFile(t, report, saved)

	out := filepath.Join(t.TempDir(), "out")
	res, err := Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: out, VerifyReport: report})
	if err != nil {
		t.Fatal(err)
	}
	pr := testfs.Read(t, res.PR)
	testfs.ContainsAll(t, "PR.md", pr,
		"Without the fix, for this pull request:\n\n```\nFAIL example.com/aserver/handlers (before 0001-fix.patch, with its tests)\n      1 tests failed (1 with subtests): TestOwned\n      3 data race reports\n      fatal error: concurrent map writes\n",
		"      fatal error: concurrent map writes\n```",
	)
	if strings.Contains(pr, "verified:") {
		t.Errorf("PR.md quotes more of carry verify than how the fix's tests fail:\n%s", pr)
	}
	if res.Verify != report {
		t.Errorf("result's verify = %q, want %q", res.Verify, report)
	}
	reviewChecklist(t, out, res, true)

	// A report that is not verified stops the export before anything is written.
	bad := verifyReport(pkgs...)
	bad.Series = saved.Series
	bad.Problems = []string{"example.com/zmachinery/meta: the tests fail with the carry"}
	writeJSONFile(t, report, bad)
	out2 := filepath.Join(t.TempDir(), "out")
	if _, err := Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: out2, VerifyReport: report}); err == nil || !strings.Contains(err.Error(), "NOT verified") {
		t.Errorf("unverified report: %v", err)
	}
	if _, err := os.Stat(out2); !os.IsNotExist(err) {
		t.Errorf("unverified report: %s written", out2)
	}
}

// seriesHashes reads the carry of the repository at root, as carry verify records it.
func seriesHashes(t *testing.T, root string) map[string]string {
	t.Helper()
	c, err := carryset.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	return verify.SeriesHashes(c.Series())
}
