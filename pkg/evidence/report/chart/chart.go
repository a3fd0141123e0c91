// Package chart draws the report's charts as SVG (gonum/plot). It is apart
// from pkg/evidence/report so that the carry CLI, which reads reports, does
// not link a plotting library.
package chart

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
)

// Series colors of the chart (also what its test looks for).
var (
	PristineColor = color.RGBA{R: 0xD6, G: 0x27, B: 0x28, A: 0xFF} // red
	PatchedColor  = color.RGBA{R: 0x1F, G: 0x77, B: 0xB4, A: 0xFF} // blue
)

// Size of every chart.
const (
	Width  = 8 * vg.Inch
	Height = 4.5 * vg.Inch
)

// minSpan is the shortest last piece of a second the chart draws: the rate
// of a few milliseconds (the load's last moment) says nothing.
const minSpan = 250 * time.Millisecond

// WriteDuel draws the duel's successful LISTs per second over time, one
// step line per shard, as SVG. The pristine line ends where its shard died,
// marked with a cross.
func WriteDuel(w io.Writer, rep *report.Report) error {
	return writeDuelChart(w, rep.Duel, "pristine fork", "with the carry", "")
}

// WriteKCPDuel is WriteDuel for the duel on real kcp.
func WriteKCPDuel(w io.Writer, k *report.RealKCP) error {
	return writeDuelChart(w, k.Duel, "stock kcp v0.32.3", "kcp v0.32.3 with the carry", " on real kcp")
}

func writeDuelChart(w io.Writer, d report.Duel, pristineName, patchedName, where string) error {
	p, err := newChart(d, pristineName, patchedName, where)
	if err != nil {
		return err
	}
	return writeSVG(w, p)
}

// writeSVG draws p at the charts' size and margin as SVG.
func writeSVG(w io.Writer, p *plot.Plot) error {
	c := vgsvg.New(Width, Height)
	p.Draw(Margin(draw.New(c)))
	_, err := c.WriteTo(w)
	return err
}

// stepLine is a series of the charts: a post-step line of pts in color.
func stepLine(pts plotter.XYs, c color.Color) (*plotter.Line, error) {
	line, err := plotter.NewLine(pts)
	if err != nil {
		return nil, err
	}
	line.StepStyle = plotter.PostStep
	line.Color = c
	line.Width = vg.Points(1.5)
	return line, nil
}

// newChart is the duel's chart, for any backend.
func newChart(d report.Duel, pristineName, patchedName, where string) (*plot.Plot, error) {
	pristine, patched := chartPoints(d.Pristine), chartPoints(d.Patched)
	if len(pristine) == 0 && len(patched) == 0 {
		return nil, errors.New("the duel has no timeline to chart")
	}
	p := plot.New()
	p.Title.Text = "Wildcard partial-metadata LISTs per second under the same load" + where + "\n" + plainLoad(d.Load)
	p.X.Label.Text = "seconds since the load started"
	p.Y.Label.Text = "successful LIST requests per second"
	p.Add(plotter.NewGrid())

	top := 0.0
	xmax := d.Load.Bound.Seconds()
	for _, pts := range []plotter.XYs{pristine, patched} {
		for _, pt := range pts {
			top = max(top, pt.Y)
			xmax = max(xmax, pt.X)
		}
	}
	p.X.Min, p.X.Max = 0, xmax
	// Headroom for the legend above the lines.
	p.Y.Min, p.Y.Max = 0, max(1, top*1.35)
	p.Y.Tick.Marker = WholeTicks{}

	for _, s := range []struct {
		pts   plotter.XYs
		name  string
		color color.Color
		run   report.Run
	}{
		{pristine, pristineName, PristineColor, d.Pristine},
		{patched, patchedName, PatchedColor, d.Patched},
	} {
		if len(s.pts) == 0 {
			continue
		}
		line, err := stepLine(s.pts, s.color)
		if err != nil {
			return nil, fmt.Errorf("the %s series: %w", s.name, err)
		}
		p.Add(line)
		label := s.name
		if s.run.Died {
			label += fmt.Sprintf(": died at %s", report.Seconds(s.run.TimeToDeath))
			if s.run.Fatal != nil {
				label += " (" + s.run.Fatal.Signature + ")"
			}
		} else {
			label += fmt.Sprintf(": alive after %s", report.Seconds(s.run.LoadElapsed))
		}
		p.Legend.Add(label, line)
		if s.run.Died {
			last := s.pts[len(s.pts)-1]
			cross, err := plotter.NewScatter(plotter.XYs{{X: last.X, Y: last.Y}})
			if err != nil {
				return nil, err
			}
			cross.GlyphStyle = draw.GlyphStyle{Color: s.color, Radius: vg.Points(5), Shape: draw.CrossGlyph{}}
			p.Add(cross)
		}
	}
	// Top left, growing into the plot: the legend's text is long, and an SVG
	// viewer's font may be wider than the one plot measured with.
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(8)
	p.Title.Padding = vg.Points(6)
	return p, nil
}

// WholeTicks are plot.DefaultTicks labelled without decimals.
type WholeTicks struct{}

// Ticks labels plot.DefaultTicks without decimals.
func (WholeTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', 0, 64)
		}
	}
	return ts
}

// Margin keeps the plot off the image's edges.
func Margin(c draw.Canvas) draw.Canvas {
	return draw.Crop(c, vg.Points(6), -vg.Points(10), vg.Points(4), -vg.Points(8))
}

// chartPoints are the corners of a run's step line: each second's rate from
// its start, over the part of the second the shard was alive, and a last
// point where the line ends (the end of the load, or the shard's death). A
// last piece of a second shorter than minSpan keeps the rate before it.
func chartPoints(r report.Run) plotter.XYs {
	var pts plotter.XYs
	end := time.Duration(0)
	for _, s := range r.Timeline {
		from := time.Duration(s.Second) * time.Second
		to := min(from+s.Span, r.Alive)
		if to <= from {
			break
		}
		end = to
		if to-from < minSpan && len(pts) > 0 {
			break
		}
		pts = append(pts, plotter.XY{X: from.Seconds(), Y: float64(s.Lists) / (to - from).Seconds()})
	}
	if len(pts) > 0 {
		pts = append(pts, plotter.XY{X: end.Seconds(), Y: pts[len(pts)-1].Y})
	}
	return pts
}

// plainLoad is the load in a few words for the title.
func plainLoad(l report.Load) string {
	return fmt.Sprintf("%d listers, %d watchers, %d writers, one shard at a time", len(l.Listers), l.Watchers, l.Writers)
}
