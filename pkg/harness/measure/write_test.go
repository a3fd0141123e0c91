package measure

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/internal/testreport"
	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
)

// TestWrite: the three files land next to benchstat.txt, which the README
// quotes and Write leaves alone; duel.json reads back as written.
func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "evidence")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bench := "goos: linux\n                 │ pristine │ patched │\nWildcardList-2   1.0m ± 1%   1.0m ± 2%  ~ (p=0.4 n=6)\n"
	if err := os.WriteFile(filepath.Join(dir, report.BenchstatFile), []byte(bench), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := testreport.Report()
	rep.Setup.Command = "evidence --note 'Synthetic.'"
	if err := Write(dir, rep); err != nil {
		t.Fatal(err)
	}
	got, err := report.Read(filepath.Join(dir, report.DuelFile))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rep, got); diff != "" {
		t.Errorf("duel.json (-written +read):\n%s", diff)
	}
	if !strings.HasPrefix(testfs.Read(t, filepath.Join(dir, report.ChartFile)), "<?xml") {
		t.Errorf("%s is not SVG", report.ChartFile)
	}
	readme := testfs.Read(t, filepath.Join(dir, report.ReadmeFile))
	for _, want := range []string{
		"# Evidence: the carry on a live test shard\n",
		"](" + report.ChartFile + ")\n",
		"- **pristine**: `bin/shards/testshard-pristine`, GOWORK=off go build ./cmd/testshard.\n",
		"- **Objects**: 50 clusterroles and configmaps in each of 3 logical clusters (a, b, c), each with 16 extra annotations;",
		"- **Machine**: 2 CPUs, linux/amd64, go1.26.8; load average (1, 5, 15 min) 0.50 0.40 0.30 before, 1.90 0.80 0.40 after. Synthetic.\n",
		"commit `0123456789ab`",
		"## Results\n\nLIST/s counts",
		strings.TrimLeft(rep.Tables(), "\n"),
		"```\n" + strings.TrimRight(bench, "\n") + "\n```\n",
		"make evidence   # this report",
		"```\nevidence --note 'Synthetic.'\n```\n",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README lacks %q:\n%s", want, readme)
		}
	}
	if got := testfs.Read(t, filepath.Join(dir, report.BenchstatFile)); got != bench {
		t.Errorf("benchstat.txt changed: %q", got)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".evidence-tmp-*")); len(left) > 0 {
		t.Errorf("temporary directories left: %v", left)
	}

	// Without benchstat.txt the README says how to get it.
	dir2 := t.TempDir()
	if err := Write(dir2, rep); err != nil {
		t.Fatal(err)
	}
	if readme := testfs.Read(t, filepath.Join(dir2, report.ReadmeFile)); !strings.Contains(readme, "Not measured yet: `make bench` writes `benchstat.txt` here") {
		t.Errorf("README without benchstat:\n%s", readme)
	}
}

// TestWriteFailureKeepsEvidence: a report that cannot be written (it does
// not add up, or has nothing to chart) leaves the previous files as they
// were and no temporary directory.
func TestWriteFailureKeepsEvidence(t *testing.T) {
	dir := t.TempDir()
	old := map[string]string{report.DuelFile: "old duel\n", report.ChartFile: "old chart\n", report.ReadmeFile: "old readme\n"}
	testfs.WriteTree(t, dir, old)
	empty := testreport.Report()
	empty.Duel.Pristine.Timeline, empty.Duel.Patched.Timeline = nil, nil
	if err := Write(dir, empty); err == nil || !strings.Contains(err.Error(), "the chart: the duel has no timeline") {
		t.Errorf("no timeline: %v", err)
	}
	for name, content := range old {
		if got := testfs.Read(t, filepath.Join(dir, name)); got != content {
			t.Errorf("%s = %q after a failed write, want %q", name, got, content)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".evidence-tmp-*")); len(left) > 0 {
		t.Errorf("temporary directories left: %v", left)
	}
}
