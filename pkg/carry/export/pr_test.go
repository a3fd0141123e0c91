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
	"github.com/kcp-carry/kcp-carry/internal/testreport"
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

func TestReadEvidenceFile(t *testing.T) {
	root := t.TempDir()
	// A missing default is "not measured"; a missing explicit file an error.
	if f, name, err := readEvidenceFile(root, "--benchstat", "", DefaultBenchstat); f != nil || name != DefaultBenchstat || err != nil {
		t.Errorf("missing default: %v %q %v", f, name, err)
	}
	if _, _, err := readEvidenceFile(root, "--benchstat", filepath.Join(root, "x.txt"), DefaultBenchstat); err == nil || !strings.HasPrefix(err.Error(), "--benchstat: open ") {
		t.Errorf("missing explicit file: %v", err)
	}
	empty := filepath.Join(root, "empty.txt")
	testfs.Write(t, empty, "\n")
	if _, _, err := readEvidenceFile(root, "--benchstat", empty, DefaultBenchstat); err == nil || !strings.Contains(err.Error(), "the file is empty") {
		t.Errorf("empty file: %v", err)
	}
	// JSON is pretty-printed; long files are cut with a note.
	testfs.Write(t, filepath.Join(root, DefaultSuiteReport), `{"pristine":{"died":true},"carry":{"died":false}}`)
	f, _, err := readEvidenceFile(root, "--suite-report", "", DefaultSuiteReport)
	if err != nil || f.Lang != "json" || !strings.Contains(f.Text, "\"pristine\": {\n    \"died\": true\n  }") {
		t.Errorf("json: %+v, %v", f, err)
	}
	long := filepath.Join(root, "long.txt")
	testfs.Write(t, long, strings.Repeat("line\n", maxEvidenceLines+5))
	f, _, err = readEvidenceFile(root, "--benchstat", long, DefaultBenchstat)
	if err != nil || strings.Count(f.Text, "line\n") != maxEvidenceLines || !strings.HasSuffix(f.Text, "... (5 more lines in "+long+")") {
		t.Errorf("long file: %q, %v", f.Text, err)
	}
}

// TestExportEvidence: with a verify report, a suite report at the default
// location and an explicit benchstat file, PR.md quotes all three and says
// "not measured" nowhere.
func TestExportEvidence(t *testing.T) {
	root := stagingFixture(t)
	pkgs := []string{"example.com/aserver/handlers", "example.com/zmachinery/meta"}
	report := filepath.Join(t.TempDir(), "verify.json")
	saved := verifyReport(pkgs...)
	saved.Series = seriesHashes(t, root)
	writeJSONFile(t, report, saved)
	testfs.Write(t, filepath.Join(root, DefaultSuiteReport), `{"pristine":{"died":true,"after":"3.2s"},"carry":{"died":false}}`)
	bench := filepath.Join(t.TempDir(), "bench.txt")
	benchText := "goos: linux\n                      │ pristine │ carry │\n                      │  sec/op  │ sec/op  vs base │\nAsPartial-2   1.0µ ± 1%   1.2µ ± 1%  +20.00% (p=0.000 n=10)"
	testfs.Write(t, bench, benchText+"\n")

	out := filepath.Join(t.TempDir(), "out")
	res, err := Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: out, VerifyReport: report, Benchstat: bench})
	if err != nil {
		t.Fatal(err)
	}
	pr := testfs.Read(t, res.PR)
	verdict := "verified: each patch passes the tests on its own, and its tests fail without it\n```"
	testfs.ContainsAll(t, "PR.md", pr,
		"```\nFAIL example.com/aserver/handlers (before 0001-fix.patch, with its tests)\n      1 tests failed (1 with subtests): TestOwned\n      3 data race reports\n      fatal error: concurrent map writes\n",
		"      fatal error: concurrent map writes\n```",
	)
	if strings.Contains(pr, "verified:") {
		t.Errorf("PR.md quotes more of carry verify than how the fix's tests fail:\n%s", pr)
	}
	evidence := testfs.Read(t, res.EvidenceFile)
	testfs.ContainsAll(t, EvidenceFile, evidence,
		"ok   example.com/zmachinery/meta (with 0001-fix.patch)\n"+verdict,
		"## Under load\n\n```json\n{\n  \"pristine\": {\n    \"died\": true,",
		"interleaved (`"+bench+"`):",
		"```\n"+benchText+"\n```",
	)
	for name, text := range map[string]string{"PR.md": pr, EvidenceFile: evidence} {
		if strings.Contains(text, "Not run") {
			t.Errorf("%s says verify was not run:\n%s", name, text)
		}
	}
	want := []Evidence{{"verify", report, true}, {"suite", DefaultSuiteReport, true}, {"benchstat", bench, true}}
	for i, e := range res.Evidence {
		if e != want[i] {
			t.Errorf("evidence[%d] = %+v, want %+v", i, e, want[i])
		}
	}

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

// TestExportDuelSummary: a duel document at the default suite location is
// summarized in PR.md as tables (pristine vs patched, the single-lister
// ratio, the scaling rows), not quoted as JSON; a document that claims to be
// a duel but does not check stops the export before anything is written.
func TestExportDuelSummary(t *testing.T) {
	root := stagingFixture(t)
	rep := testreport.Report()
	data, err := rep.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	testfs.Write(t, filepath.Join(root, DefaultSuiteReport), string(data))

	out := filepath.Join(t.TempDir(), "out")
	res, err := Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: out, NoVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	evidence := testfs.Read(t, res.EvidenceFile)
	testfs.ContainsAll(t, EvidenceFile, evidence,
		"## Under load\n\nThe same load of concurrent wildcard partial-metadata LISTs",
		"one at a time (`evidence/duel.json`).",
		"| shard | requests | LIST/s | time to death | fatal error |\n|---|--:|--:|---|---|\n"+
			"| pristine fork | 3,092 | 800 | 3.5 s | `concurrent map writes` in `handlers.setKCPOriginalAPIVersionAnnotation` |\n"+
			"| with the carry | 17,160 | 780 | survived 20.0 s | none |\n",
		"With the carry a lister gets **0.974×** the pristine fork's LIST/s (297/s against 305/s).",
		"| listers | 1 | 2 | 4 |\n|---|--:|--:|--:|\n| with the carry, LIST/s | 300 | 600 | 1,200 |\n| pristine fork, LIST/s | 300 | **died** at 3.0 s (600/s until then) | **died** at 1.0 s (1,200/s until then) |\n",
	)
	for _, bad := range []string{"```json", `"schema"`} {
		if strings.Contains(evidence, bad) {
			t.Errorf("%s has %q:\n%s", EvidenceFile, bad, evidence)
		}
	}
	// The pull request texts quote no measurement of this repository.
	for _, bad := range []string{"LIST/s", "duel"} {
		if pr := testfs.Read(t, res.PR); strings.Contains(pr, bad) {
			t.Errorf("PR.md has %q:\n%s", bad, pr)
		}
	}
	if len(res.Evidence) < 2 || res.Evidence[1] != (Evidence{"suite", DefaultSuiteReport, true}) {
		t.Errorf("evidence = %+v", res.Evidence)
	}

	rep.Duel.Patched.Variant = rep.Duel.Pristine.Variant
	data, err = rep.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	testfs.Write(t, filepath.Join(root, DefaultSuiteReport), string(data))
	out2 := filepath.Join(t.TempDir(), "out")
	_, err = Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: out2, NoVerify: true})
	if want := "--suite-report " + filepath.Join(root, DefaultSuiteReport) + ": duel.patched: variant \"pristine\", want \"patched\""; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("inconsistent duel: %v, want %q", err, want)
	}
	if _, err := os.Stat(out2); !os.IsNotExist(err) {
		t.Errorf("inconsistent duel: %s written", out2)
	}
}
