package measure

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/harness/report"
	"github.com/kcp-carry/kcp-carry/pkg/util/markdown"
)

// Files Write writes, and the benchstat output it quotes (hack/bench.sh
// writes it into the same directory).
const (
	DuelFile      = "duel.json"
	ChartFile     = "lists-per-second.svg"
	KCPChartFile  = "kcp-lists-per-second.svg"
	ReadmeFile    = "README.md"
	BenchstatFile = "benchstat.txt"
)

// Write writes duel.json, lists-per-second.svg and README.md into dir
// (created if missing; other files in it, such as benchstat.txt, stay). It
// renders all three into a temporary directory inside dir first and renames
// them into place only when all three are written, so a failure leaves the
// previous evidence intact.
func Write(dir string, rep *report.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	bench, err := os.ReadFile(filepath.Join(dir, BenchstatFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	sharded, err := ReadSharded(dir)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(dir, ".evidence-tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	data, err := rep.Marshal()
	if err != nil {
		return err
	}
	var chart bytes.Buffer
	if err := WriteChart(&chart, rep); err != nil {
		return fmt.Errorf("the chart: %w", err)
	}
	files := []struct {
		name string
		data []byte
	}{
		{ChartFile, chart.Bytes()},
		{DuelFile, data},
		{ReadmeFile, README(rep, string(bench), sharded)},
	}
	if rep.RealKCP != nil {
		var kcpChart bytes.Buffer
		if err := WriteKCPChart(&kcpChart, rep.RealKCP); err != nil {
			return fmt.Errorf("the real-kcp chart: %w", err)
		}
		files = append(files, struct {
			name string
			data []byte
		}{KCPChartFile, kcpChart.Bytes()})
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(tmp, f.name), f.data, 0o644); err != nil {
			return err
		}
	}
	for i, f := range files {
		if err := os.Rename(filepath.Join(tmp, f.name), filepath.Join(dir, f.name)); err != nil {
			var done []string
			for _, d := range files[:i] {
				done = append(done, d.name)
			}
			return fmt.Errorf("%w (already replaced: %s)", err, strings.Join(done, ", "))
		}
	}
	return nil
}

// README is evidence/README.md: the setup, the chart, the summary, the
// sharded section (when sharded is not nil), the benchstat table (when bench
// is not empty) and how to reproduce.
func README(rep *report.Report, bench string, sharded *Sharded) []byte {
	var b strings.Builder
	s := rep.Setup
	b.WriteString("# Evidence: the carry on a live test shard\n\n")
	b.WriteString("Written by `make evidence` (`cmd/evidence`, `pkg/harness/measure`); every number below is in [`" + DuelFile +
		"`](" + DuelFile + ") (format: `pkg/harness/report`). It is a report: the live suite (`test/e2e`) is what asserts that the " +
		"pristine shard dies and the patched one holds.\n\n")
	b.WriteString("![Successful wildcard partial-metadata LISTs per second, pristine fork against the carry, under the same load](" + ChartFile + ")\n\n")

	b.WriteString("## Setup\n\n")
	b.WriteString("- **Test shard**: `cmd/testshard`, the fork's API server with its watch cache behind kcp's request filters, over kcp's embedded etcd, on 127.0.0.1 (a shard-like server, not kcp), with its watch cache on and the cache mutation detector off. Each duel run gets a fresh shard, and so does each variant before the single-lister rounds; the scaling steps reuse those, and a shard that died is replaced by a fresh one (the hammer seeds it before its load).\n")
	for _, sh := range s.Shards {
		fmt.Fprintf(&b, "- **%s**: `%s`, %s.\n", sh.Variant, sh.Binary, sh.Build)
	}
	fmt.Fprintf(&b, "- **Objects**: %d %s in each of %d logical clusters (%s), each with %d extra annotations; the hammer seeds them before the first load on a shard.\n",
		s.Objects, strings.Join(s.Resources, " and "), len(s.Clusters), strings.Join(s.Clusters, ", "), s.Annotations)
	b.WriteString("- **Load**: `pkg/harness/hammer` in the same process, wildcard (`/clusters/*/...`) partial-metadata requests. One shard is under load at a time; both share the machine with the hammer, so the numbers compare the two shards on this machine rather than measure a capacity.\n")
	fmt.Fprintf(&b, "- **Machine**: %d CPUs, %s/%s, %s", s.CPUs, s.GOOS, s.GOARCH, s.GoVersion)
	if s.LoadAvgBefore != "" {
		fmt.Fprintf(&b, "; load average (1, 5, 15 min) %s before, %s after", s.LoadAvgBefore, s.LoadAvgAfter)
	}
	b.WriteString(".")
	if s.Note != "" {
		fmt.Fprintf(&b, " %s", s.Note)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "- **Run**: %s, %s of wall time", rep.Started.UTC().Format("2006-01-02 15:04:05 MST"), report.Seconds(rep.Elapsed))
	if s.Commit != "" {
		fmt.Fprintf(&b, ", commit `%s`", s.Commit)
	}
	b.WriteString(".\n\n")

	b.WriteString("## Results\n\n")
	b.WriteString("LIST/s counts successful LIST requests (a page of a paged LIST is one) per second the shard was alive; time to death runs from the start of the load to the first failed request of the streak that ended with the process gone.\n\n")
	b.WriteString(strings.TrimLeft(rep.Tables(), "\n"))

	if k := rep.RealKCP; k != nil {
		b.WriteString("\n## On real kcp\n\n")
		b.WriteString("kcp v0.32.3 itself, built twice from the same source tree with the same ldflags: ")
		for i, bin := range k.Binaries {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s `%s` (`%s`)", bin.Variant, bin.Binary, bin.Build)
		}
		b.WriteString(". Each runs `kcp start --batteries-included=admin` on 127.0.0.1 with a fresh root directory; the workspaces are created through kcp's Workspace API, and the hammer talks to kcp as the shard admin.\n\n")
		b.WriteString("![Successful wildcard partial-metadata LISTs per second on real kcp, stock against the carry, under the same load](" + KCPChartFile + ")\n\n")
		b.WriteString(k.Markdown())
	}

	if sharded != nil {
		b.WriteString("\n## In kcp's sharded topology\n\n")
		b.WriteString(ShardedMarkdown(sharded))
	}

	b.WriteString("\n## Cost benchmarks\n\n")
	if strings.TrimSpace(bench) == "" {
		b.WriteString("Not measured yet: `make bench` writes `" + BenchstatFile + "` here, and the next `make evidence` (or `bin/evidence --render-only`) quotes it.\n")
	} else {
		b.WriteString("`go test -bench` of the real list handler (`test/bench`), pristine (`GOWORK=off`) against patched, compared with benchstat ([`" +
			BenchstatFile + "`](" + BenchstatFile + "), from `make bench`):\n\n")
		b.WriteString(markdown.Fence("", strings.TrimRight(bench, "\n")) + "\n")
	}

	b.WriteString("\n## Reproduce\n\n")
	b.WriteString("```sh\n")
	b.WriteString("make bench      # the Go benchmarks: " + BenchstatFile + " (and bench/)\n")
	b.WriteString("make evidence   # this report: " + DuelFile + ", " + ChartFile + ", " + ReadmeFile + "\n")
	b.WriteString("bin/evidence --render-only   # the chart and this README again from " + DuelFile + " (e.g. after make bench), measuring nothing\n")
	b.WriteString("```\n")
	if s.Command != "" {
		b.WriteString("\nThis report was made by:\n\n" + markdown.Fence("", s.Command) + "\n")
	}
	b.WriteString("\n`bin/evidence --help` lists the bounds (duel duration and request budget, step duration, rounds, scaling steps). A run that fails leaves the previous report in place.\n")
	return []byte(b.String())
}
