package chart

import (
	"errors"
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
)

// Shard colors of the sharded chart.
var shardColors = []color.Color{PatchedColor, PristineColor}

// WriteSharded draws, for the stock run, the share of the front-proxy's
// answers that were 200 for each shard's workspaces, second by second.
func WriteSharded(w io.Writer, s *report.Sharded) error {
	p := plot.New()
	p.Title.Text = "Stock kcp v0.32.3, two shards: the front-proxy's answers per shard's workspaces\nseed load on shard 1's own endpoint only"
	p.X.Label.Text = "seconds since the probes started"
	p.Y.Label.Text = "probes answered 200 (%)"
	p.Add(plotter.NewGrid())
	p.Y.Min, p.Y.Max = 0, 135
	p.Y.Tick.Marker = WholeTicks{}
	drawn := 0
	for shard := range s.Stock.Shards {
		pts := answerRate(s.Stock.Probes, shard)
		if len(pts) == 0 {
			continue
		}
		line, err := stepLine(pts, shardColors[shard%len(shardColors)])
		if err != nil {
			return err
		}
		p.Add(line)
		sh := s.Stock.Shards[shard]
		label := sh.Name + ": not loaded"
		if sh.Loaded {
			label = sh.Name + ": loaded"
		}
		if sh.Died {
			label += fmt.Sprintf(", died %s into its load", report.Seconds(sh.TimeToDeath))
			if sh.Fatal != "" {
				label += " (" + sh.Fatal + ")"
			}
		} else {
			label += ", alive"
		}
		p.Legend.Add(label, line)
		drawn++
	}
	if drawn == 0 {
		return errors.New("the stock run has no probes to chart")
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(8)
	return writeSVG(w, p)
}

// answerRate is, per second, the share of shard's workspaces' probes that
// were answered 200, in percent; seconds without a probe are left out.
func answerRate(probes []report.Probe, shard int) plotter.XYs {
	var ok, all []int
	for _, p := range probes {
		if p.Shard != shard {
			continue
		}
		for i, sec := range p.Seconds {
			for len(all) <= i {
				ok, all = append(ok, 0), append(all, 0)
			}
			ok[i] += sec.OK
			all[i] += sec.OK + sec.Failed
		}
	}
	var pts plotter.XYs
	for i := range all {
		if all[i] > 0 {
			pts = append(pts, plotter.XY{X: float64(i), Y: 100 * float64(ok[i]) / float64(all[i])})
		}
	}
	if len(pts) > 0 {
		last := pts[len(pts)-1]
		pts = append(pts, plotter.XY{X: last.X + 1, Y: last.Y})
	}
	return pts
}
