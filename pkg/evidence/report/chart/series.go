package chart

import (
	"errors"
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Line is one series of a Series chart: Y over X, in Dashed when a second
// quantity shares the chart with the first.
type Line struct {
	Name   string
	X, Y   []float64
	Dashed bool
	// Color is the line's; nil picks the next of the chart's colors.
	Color color.Color
}

// SeriesColors are the colors Series picks from, in order.
var SeriesColors = []color.Color{
	PatchedColor, PristineColor,
	color.RGBA{R: 0x2C, G: 0xA0, B: 0x2C, A: 0xFF}, // green
	color.RGBA{R: 0xFF, G: 0x7F, B: 0x0E, A: 0xFF}, // orange
	color.RGBA{R: 0x94, G: 0x67, B: 0xBD, A: 0xFF}, // purple
}

// WriteSeries draws lines (straight segments between samples, each sample
// marked) on one chart as SVG: a soak's memory or etcd series over time.
func WriteSeries(w io.Writer, title, xLabel, yLabel string, lines []Line) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	top, xmax, drawn := 0.0, 0.0, 0
	for i, l := range lines {
		if len(l.X) != len(l.Y) {
			return fmt.Errorf("series %s: %d x and %d y values", l.Name, len(l.X), len(l.Y))
		}
		if len(l.X) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(l.X))
		for j := range l.X {
			pts[j] = plotter.XY{X: l.X[j], Y: l.Y[j]}
			top, xmax = max(top, l.Y[j]), max(xmax, l.X[j])
		}
		line, scatter, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("series %s: %w", l.Name, err)
		}
		c := l.Color
		if c == nil {
			c = SeriesColors[i%len(SeriesColors)]
		}
		line.Color, line.Width = c, vg.Points(1.5)
		if l.Dashed {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		scatter.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(1.5), Shape: draw.CircleGlyph{}}
		p.Add(line, scatter)
		p.Legend.Add(l.Name, line)
		drawn++
	}
	if drawn == 0 {
		return errors.New("no series to chart")
	}
	p.X.Min, p.X.Max = 0, max(1, xmax)
	// Headroom for the legend above the lines.
	p.Y.Min, p.Y.Max = 0, max(1, top*1.4)
	p.Y.Tick.Marker = WholeTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(8)
	p.Title.Padding = vg.Points(6)
	return writeSVG(w, p)
}
