package soak

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/discovery"

	"github.com/kcp-carry/kcp-carry/pkg/evidence/report/chart"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/util/atomicfile"
)

// The files a soak writes in its output directory (besides the profiles).
const (
	ResultFile = "soak.json"
	MemorySVG  = "memory.svg"
	EtcdSVG    = "etcd.svg"
)

func discoveryOf(srv *server.KCP) (*discovery.DiscoveryClient, error) {
	return discovery.NewDiscoveryClientForConfig(srv.Config())
}

// writeFile writes data to path through a temporary file, making its
// directory.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// write puts soak.json and the charts into dir.
func (r *Result) write(dir string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("soak: encoding the result: %w", err)
	}
	if err := writeFile(filepath.Join(dir, ResultFile), append(b, '\n')); err != nil {
		return err
	}
	return r.WriteCharts(dir)
}

// ReadResult reads a soak.json.
func ReadResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// WriteCharts draws the series into dir: memory.svg (RSS, solid, and Go
// heap in use, dashed, per kcp) and etcd.svg (etcd's database size).
func (r *Result) WriteCharts(dir string) error {
	var mem, etcd []chart.Line
	for i, v := range r.Variants {
		if len(v.Samples) == 0 {
			continue
		}
		c := chart.SeriesColors[i%len(chart.SeriesColors)]
		x := make([]float64, len(v.Samples))
		rss, heap, db := make([]float64, len(x)), make([]float64, len(x)), make([]float64, len(x))
		for j, s := range v.Samples {
			x[j] = s.At.Minutes()
			rss[j], heap[j], db[j] = s.RSSBytes/(1<<20), s.HeapInuseBytes/(1<<20), s.EtcdDBBytes/(1<<20)
		}
		name := v.Name + " (" + listerWords(v.Listers)
		if len(v.Args) > 0 {
			name += ", " + strings.Join(v.Args, " ")
		}
		name += ")"
		mem = append(mem,
			chart.Line{Name: name + ": RSS", X: x, Y: rss, Color: c},
			chart.Line{Name: name + ": Go heap in use", X: x, Y: heap, Color: c, Dashed: true})
		etcd = append(etcd, chart.Line{Name: name, X: x, Y: db, Color: c})
	}
	if len(mem) == 0 {
		return nil
	}
	title := fmt.Sprintf("%s side by side, sampled every %s\n%s", plural(len(r.Variants), "kcp"), r.Interval, r.loadWords())
	for _, c := range []struct {
		file, title, y string
		lines          []chart.Line
	}{
		{MemorySVG, "kcp's memory: " + title, "MiB", mem},
		{EtcdSVG, "the embedded etcd's database size: " + title, "MiB", etcd},
	} {
		var b bytes.Buffer
		if err := chart.WriteSeries(&b, c.title, "minutes since the hammer started", c.y, c.lines); err != nil {
			return fmt.Errorf("soak: %s: %w", c.file, err)
		}
		if err := writeFile(filepath.Join(dir, c.file), b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

func (r *Result) loadWords() string {
	var res []string
	for _, r := range r.Resources {
		res = append(res, r[strings.LastIndex(r, "/")+1:]) // clusterroles of rbac.authorization.k8s.io/v1/clusterroles
	}
	return fmt.Sprintf("%d listers and %d writers over %d %s per logical cluster", r.Load.Listers, r.Load.Writers, r.Load.Objects, strings.Join(res, ", "))
}

// listerWords says what a kcp's listers send: "partial-metadata listers",
// "JSON listers", or both.
func listerWords(shapes []string) string {
	json, partial := 0, 0
	for _, s := range shapes {
		if strings.HasPrefix(s, "json:") {
			json++
		} else {
			partial++
		}
	}
	switch {
	case json == 0:
		return "partial-metadata listers"
	case partial == 0:
		return "JSON listers"
	}
	return fmt.Sprintf("%d partial-metadata and %d JSON listers", partial, json)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func uniq(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// WriteText is the soak's report for people: per kcp the load's counts, the
// samples as a table, the heap diffs' top entries and the checks.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "soak: %s under %s, sampled every %s\n", plural(len(r.Variants), "kcp"), r.loadWords(), r.Interval)
	for _, v := range r.Variants {
		fmt.Fprintf(&b, "\n== %s: %s %s (%s), listers %s\n", v.Name, v.Binary, strings.Join(v.Args, " "), v.Version, strings.Join(uniq(v.Listers), ","))
		if v.Error != "" {
			fmt.Fprintf(&b, "  error: %s\n", v.Error)
		}
		if rep := v.Report; rep != nil {
			fmt.Fprintf(&b, "  %d requests (%d failed, %d answered 5xx) in %s = %.0f req/s, %d successful writes\n",
				rep.Requests, rep.Failed, rep.Server5xx(), rep.LoadElapsed.Round(time.Second), rep.ReqPerSec, rep.SuccessfulWrites)
			if rep.Death.Died {
				fmt.Fprintf(&b, "  kcp DIED %s into the load\n", rep.TimeToDeath.Round(time.Millisecond))
			}
		}
		WriteSamples(&b, v.Samples)
		for _, d := range v.Diffs {
			WriteDiff(&b, d, 10)
		}
		if v.Report != nil {
			for _, c := range v.Report.Checks {
				if !c.Enabled {
					continue
				}
				state := "ok"
				switch {
				case !c.Ran:
					state = "not run: " + c.Note
				case c.Violations > 0:
					state = fmt.Sprintf("VIOLATED by %d", c.Violations)
				case c.Checked == 0:
					state = "NOTHING checked: " + c.Note
				}
				fmt.Fprintf(&b, "  check %s: %s (%d checked)\n", c.Title(), state, c.Checked)
			}
		}
		if v.Fatal != "" {
			fmt.Fprintf(&b, "  kcp output: %s\n", v.Fatal)
		}
	}
	verdict := "clean"
	if !r.Clean() {
		verdict = "NOT clean"
	}
	fmt.Fprintf(&b, "\nverdict: %s\n", verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteSamples writes samples as a table, MiB for sizes.
func WriteSamples(w io.Writer, samples []Sample) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  at\tRSS MiB\tanon MiB\tfile MiB\theap in use MiB\theap objects\tgoroutines\tetcd db MiB\tdb in use MiB\tetcd revision\tcompacted to\twatch cache capacity\t")
	for _, s := range samples {
		fmt.Fprintf(tw, "  %s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t%.1f\t%.0f\t%.0f\t%.0f\t\n", s.At.Round(time.Second), s.RSSBytes/(1<<20),
			s.RSSAnonBytes/(1<<20), s.RSSFileBytes/(1<<20), s.HeapInuseBytes/(1<<20),
			s.HeapObjects, s.Goroutines, s.EtcdDBBytes/(1<<20), s.EtcdDBInUseBytes/(1<<20), s.EtcdRevision, s.EtcdCompactRevision, s.WatchCacheCapacity)
	}
	_ = tw.Flush()
}

// WriteDiff writes a heap diff's totals and its first n entries, in
// go tool pprof -top's columns (flat, cum), MiB.
func WriteDiff(w io.Writer, d HeapDiff, n int) {
	fmt.Fprintf(w, "  heap %s → %s: inuse_space %+.1f MiB, inuse_objects %+d\n", d.Base, d.End, float64(d.InuseBytes)/(1<<20), d.InuseObjects)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, e := range d.Top {
		if i == n {
			break
		}
		fmt.Fprintf(tw, "    %+.1f MiB\t%+.1f MiB cum\t%+d objects\t%s\n", float64(e.FlatBytes)/(1<<20), float64(e.CumBytes)/(1<<20), e.FlatObjects, e.Function)
	}
	_ = tw.Flush()
}
