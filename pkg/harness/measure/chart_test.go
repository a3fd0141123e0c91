package measure

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/color"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot/plotter"

	"github.com/kcp-carry/kcp-carry/internal/testreport"
	"github.com/kcp-carry/kcp-carry/pkg/harness/report"
)

// svgPath is a <path> of the chart: its stroke color and the x of its
// vertices (in the SVG's coordinates).
type svgPath struct {
	stroke string
	xs     []float64
}

// parseSVG parses the chart as XML and returns its stroked paths and texts.
func parseSVG(t *testing.T, data []byte) (paths []svgPath, texts []string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	strokeRE := regexp.MustCompile(`stroke:(#[0-9A-Fa-f]{6})`)
	vertexRE := regexp.MustCompile(`[ML]([-0-9.e+]+),([-0-9.e+]+)`)
	sawSVG := false
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the chart is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			switch el.Name.Local {
			case "svg":
				sawSVG = true
			case "text":
				inText = true
				texts = append(texts, "")
			case "path":
				var p svgPath
				for _, a := range el.Attr {
					switch a.Name.Local {
					case "style":
						if m := strokeRE.FindStringSubmatch(a.Value); m != nil {
							p.stroke = strings.ToUpper(m[1])
						}
					case "d":
						for _, m := range vertexRE.FindAllStringSubmatch(a.Value, -1) {
							x, err := strconv.ParseFloat(m[1], 64)
							if err != nil {
								t.Fatalf("path vertex %q: %v", m[0], err)
							}
							p.xs = append(p.xs, x)
						}
					}
				}
				if p.stroke != "" {
					paths = append(paths, p)
				}
			}
		case xml.CharData:
			if inText {
				texts[len(texts)-1] += string(el)
			}
		case xml.EndElement:
			if el.Name.Local == "text" {
				inText = false
			}
		}
	}
	if !sawSVG {
		t.Fatal("no <svg> element")
	}
	return paths, texts
}

func hex(c color.RGBA) string { return fmt.Sprintf("#%02X%02X%02X", c.R, c.G, c.B) }

// longest is the path of that stroke with the most vertices (the series
// line, not its legend sample or the death cross).
func longest(paths []svgPath, stroke string) svgPath {
	var best svgPath
	for _, p := range paths {
		if p.stroke == stroke && len(p.xs) > len(best.xs) {
			best = p
		}
	}
	return best
}

func maxOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// TestChart renders a synthetic duel (pristine dies at 3.5 s, patched runs
// 20 s) and checks that the SVG parses, holds both series as step lines
// with a vertex per second, the pristine one ending far left of the patched
// one, and names them in the legend.
func TestChart(t *testing.T) {
	rep := testreport.Report()
	var buf bytes.Buffer
	if err := WriteChart(&buf, rep); err != nil {
		t.Fatal(err)
	}
	paths, texts := parseSVG(t, buf.Bytes())
	pristine, patched := longest(paths, hex(PristineColor)), longest(paths, hex(PatchedColor))
	// A post-step line over n points has 2n-1 vertices: 5 points for
	// pristine (4 seconds and the end), 21 for patched.
	if len(pristine.xs) != 2*5-1 {
		t.Errorf("pristine line has %d vertices, want 9", len(pristine.xs))
	}
	if len(patched.xs) != 2*21-1 {
		t.Errorf("patched line has %d vertices, want 41", len(patched.xs))
	}
	if len(pristine.xs) > 0 && len(patched.xs) > 0 {
		// Both start at x = 0; pristine ends at 3.5 s of 20.
		p0, pEnd, q0, qEnd := pristine.xs[0], maxOf(pristine.xs), patched.xs[0], maxOf(patched.xs)
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

	if err := WriteChart(io.Discard, &report.Report{}); err == nil {
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
