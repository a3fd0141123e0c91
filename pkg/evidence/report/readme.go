package report

import (
	"fmt"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/util/markdown"
)

// Files of the evidence directory (evidence/) the report is written to, and
// the benchstat output its README quotes (hack/bench.sh writes it there).
const (
	DuelFile      = "duel.json"
	ChartFile     = "lists-per-second.svg"
	KCPChartFile  = "kcp-lists-per-second.svg"
	ReadmeFile    = "README.md"
	BenchstatFile = "benchstat.txt"
)

// README is evidence/README.md: the setup, the chart, the summary, the
// sharded section (when sharded is not nil), the benchstat table (when
// bench is not empty) and how to reproduce.
func README(rep *Report, bench string, sharded *Sharded) []byte {
	var b strings.Builder
	s := rep.Setup
	b.WriteString("# Evidence: the carry on a live test shard\n\n")
	b.WriteString("Written by `make evidence` (`cmd/evidence`, `pkg/harness/measure`); every number below is in [`" + DuelFile +
		"`](" + DuelFile + ") (format: `pkg/evidence/report`). It is a report: the live suite (`test/e2e`) is what asserts that the " +
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
	fmt.Fprintf(&b, "- **Run**: %s, %s of wall time on the test shards", rep.Started.UTC().Format("2006-01-02 15:04:05 MST"), Seconds(rep.Elapsed))
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
	b.WriteString("bin/evidence --kcp-only --kcp-patched bin/kcp --kcp-pristine bin/kcp-pristine   # the real-kcp section alone, into " + DuelFile + "\n")
	b.WriteString("bin/evidence --sharded-only --sharded-bin bin   # the sharded section alone\n")
	b.WriteString("```\n")
	if s.Command != "" {
		made := "This report was made by"
		if strings.Contains(s.Command, "\n") {
			made += " (each later line measured its section again)"
		}
		b.WriteString("\n" + made + ":\n\n" + markdown.Fence("", s.Command) + "\n")
	}
	b.WriteString("\n`bin/evidence --help` lists the bounds (duel duration and request budget, step duration, rounds, scaling steps). A run that fails leaves the previous report in place.\n")
	return []byte(b.String())
}
