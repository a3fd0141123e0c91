package chart

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot/plotter"

	"github.com/kcp-carry/kcp-carry/internal/testreport"
	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
)

// TestChart renders a synthetic duel (pristine dies at 3.5 s, patched runs
// 20 s) and checks that the SVG parses, holds both series as step lines
// with a vertex per second, the pristine one ending far left of the patched
// one, and names them in the legend.
func TestChart(t *testing.T) {
	rep := testreport.Report()
	var buf bytes.Buffer
	if err := WriteDuel(&buf, rep); err != nil {
		t.Fatal(err)
	}
	paths, texts := testreport.ParseSVG(t, buf.Bytes())
	pristine, patched := testreport.Longest(paths, testreport.Hex(PristineColor)), testreport.Longest(paths, testreport.Hex(PatchedColor))
	// A post-step line over n points has 2n-1 vertices: 5 points for
	// pristine (4 seconds and the end), 21 for patched.
	if len(pristine.Xs) != 2*5-1 {
		t.Errorf("pristine line has %d vertices, want 9", len(pristine.Xs))
	}
	if len(patched.Xs) != 2*21-1 {
		t.Errorf("patched line has %d vertices, want 41", len(patched.Xs))
	}
	if len(pristine.Xs) > 0 && len(patched.Xs) > 0 {
		// Both start at x = 0; pristine ends at 3.5 s of 20.
		p0, pEnd, q0, qEnd := pristine.Xs[0], testreport.MaxOf(pristine.Xs), patched.Xs[0], testreport.MaxOf(patched.Xs)
		if p0 != q0 {
			t.Errorf("the lines start at x %v and %v, want the same", p0, q0)
		}
		if got := (pEnd - p0) / (qEnd - q0); got < 0.17 || got > 0.18 {
			t.Errorf("pristine line spans %.3f of the patched one's width, want 3.5/20", got)
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{
		"pristine fork: died at 3.5 s (concurrent map writes)",
		"with the carry: alive after 20.0 s",
		"Wildcard partial-metadata LISTs per second under the same load",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the chart's texts lack %q:\n%s", want, all)
		}
	}

	if err := WriteDuel(io.Discard, &report.Report{}); err == nil {
		t.Error("a duel without timelines was charted")
	}
}

func TestChartPoints(t *testing.T) {
	r := report.Run{Alive: 2300 * time.Millisecond, Timeline: []report.Second{
		{Second: 0, Span: time.Second, Lists: 100},
		{Second: 1, Span: time.Second, Lists: 80},
		{Second: 2, Span: time.Second, Lists: 30}, // the shard died at 2.3 s: 30 in 0.3 s
		{Second: 3, Span: 500 * time.Millisecond, Lists: 0},
	}}
	want := plotter.XYs{{X: 0, Y: 100}, {X: 1, Y: 80}, {X: 2, Y: 100}, {X: 2.3, Y: 100}}
	if diff := cmp.Diff(want, chartPoints(r), cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
		t.Errorf("points (-want +got):\n%s", diff)
	}
	// A last piece shorter than minSpan keeps the rate before it but ends the line.
	r = report.Run{Alive: 2050 * time.Millisecond, Timeline: []report.Second{
		{Second: 0, Span: time.Second, Lists: 100},
		{Second: 1, Span: time.Second, Lists: 80},
		{Second: 2, Span: 50 * time.Millisecond, Lists: 1},
	}}
	want = plotter.XYs{{X: 0, Y: 100}, {X: 1, Y: 80}, {X: 2.05, Y: 80}}
	if diff := cmp.Diff(want, chartPoints(r), cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
		t.Errorf("points with a short end (-want +got):\n%s", diff)
	}
	if pts := chartPoints(report.Run{}); len(pts) != 0 {
		t.Errorf("no timeline: %v", pts)
	}
}
