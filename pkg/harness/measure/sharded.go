package measure

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/report"
	"github.com/kcp-carry/kcp-carry/pkg/harness/report/chart"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/harness/shardedload"
)

// Files of the sharded section.
const (
	ShardedFile      = "sharded.json"
	ShardedChartFile = "sharded-front-proxy.svg"
)

// ShardedOptions configure the measurement in kcp's sharded topology.
type ShardedOptions struct {
	// Patched and Pristine are the servers with and without the carry
	// (bin/<server> and bin/<server>-pristine of `make sharded`).
	Patched, Pristine server.TopologyBinaries
	// Duration bounds the carried load on each shard and the cache server;
	// the stock load on shard 1 runs until it dies or StockBound.
	Duration, StockBound time.Duration
	// Dir holds the topologies' root directories (a temporary directory
	// when empty; removed afterwards either way).
	Dir string
	// Env are the servers' extra environment variables.
	Env  []string
	Logf func(format string, args ...any)
}

// DefaultShardedOptions are `make evidence`'s (binaries in bin/).
func DefaultShardedOptions(binDir string) ShardedOptions {
	return ShardedOptions{
		Patched: server.TopologyBinariesIn(binDir, ""), Pristine: server.TopologyBinariesIn(binDir, "-pristine"),
		Duration: 20 * time.Second, StockBound: 3 * time.Minute, Env: []string{"GOMAXPROCS=8"},
	}
}

// shardedWorkspaces are the workspaces under root on each shard.
var shardedWorkspaces = [][]string{{"evidence-a"}, {"evidence-b", "evidence-c"}}

// Sharded is the sharded section's data (evidence/sharded.json).
type Sharded struct {
	Started time.Time     `json:"started"`
	Elapsed time.Duration `json:"elapsedNanos"`
	// Load is the seed load of each loaded shard.
	Load     report.Load `json:"load"`
	Carried  ShardedRun  `json:"carried"`
	Stock    ShardedRun  `json:"stock"`
	Binaries []string    `json:"binaries"`
	LoadAvg  []string    `json:"loadAvg"` // before, after
}

// ShardedRun is one topology's run.
type ShardedRun struct {
	StartedIn time.Duration `json:"startedInNanos"`
	// Shards are by shard index; a shard without load has Loaded false.
	Shards []ShardedShard `json:"shards"`
	// Cache is the cache server under its wildcard partial-metadata load.
	Cache ShardedShard `json:"cache"`
	// Probes are the front-proxy's answers for each workspace.
	Probes []shardedload.ProbeResult `json:"probes"`
}

// ShardedShard is one server's outcome.
type ShardedShard struct {
	Name           string        `json:"name"`
	Loaded         bool          `json:"loaded"`
	Died           bool          `json:"died"`
	TimeToDeath    time.Duration `json:"timeToDeathNanos,omitempty"`
	Fatal          string        `json:"fatal,omitempty"`
	LoadElapsed    time.Duration `json:"loadElapsedNanos"`
	ListsPerSecond float64       `json:"listsPerSecond"`
	Server5xx      int64         `json:"server5xx"`
	// Checks are the hammer's checks that ran: id, name, checked, violations.
	Checks  []ShardedCheck `json:"checks,omitempty"`
	Verdict string         `json:"verdict"`
}

// ShardedCheck is one hammer check's result on a server.
type ShardedCheck struct {
	ID         string           `json:"id"`
	Name       string           `json:"name"`
	Checked    int64            `json:"checked"`
	Violations int64            `json:"violations"`
	Values     map[string]int64 `json:"values,omitempty"`
}

// RunSharded starts the carried topology, loads both shards and the cache
// server, stops it, then starts the stock one and loads shard 1 only (and
// the cache server), probing every workspace through the front-proxy.
func RunSharded(ctx context.Context, o ShardedOptions) (*Sharded, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	dir := o.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "kcp-carry-sharded-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	s := &Sharded{Started: time.Now(), LoadAvg: []string{loadAvg()}}
	s.Binaries = append(o.Patched.All(), o.Pristine.All()...)
	load := shardedload.SeedLoad(nil, o.Duration)
	s.Load = loadOf(load)

	var err error
	if s.Carried, err = runTopology(ctx, o, filepath.Join(dir, "carried"), o.Patched, false); err != nil {
		return nil, fmt.Errorf("carried topology: %w", err)
	}
	if s.Stock, err = runTopology(ctx, o, filepath.Join(dir, "stock"), o.Pristine, true); err != nil {
		return nil, fmt.Errorf("stock topology: %w", err)
	}
	s.Elapsed = time.Since(s.Started)
	s.LoadAvg = append(s.LoadAvg, loadAvg())
	return s, nil
}

func runTopology(ctx context.Context, o ShardedOptions, dir string, bins server.TopologyBinaries, stock bool) (ShardedRun, error) {
	var r ShardedRun
	what := map[bool]string{false: "carried", true: "stock"}[stock]
	topo, err := server.StartTopology(ctx, server.TopologyOptions{Binaries: bins, Dir: dir, Env: o.Env, Progress: o.Logf})
	if err != nil {
		return r, err
	}
	defer topo.Stop()
	r.StartedIn = topo.StartedIn
	ws, err := topo.PlaceAll(ctx, shardedWorkspaces)
	if err != nil {
		return r, err
	}
	plan := shardedload.Plan{Shards: map[int]hammer.Options{}, Probe: ws.Workspaces(), Linger: 10 * time.Second}
	cacheClusters := ws.All()
	if stock {
		// APIExports on shard 0 for the cache server: shard 1's die with it.
		cacheClusters = ws[0]
		seed := shardedload.SeedLoad(ws[0], o.Duration)
		seed.Resources, seed.SequentialProbe = []hammer.Resource{hammer.APIExports}, true
		if seed.Config, err = topo.ShardConfig(0); err != nil {
			return r, err
		}
		if rep, err := hammer.Run(ctx, seed); err != nil || rep.Death.Died || rep.Seed.Objects == 0 {
			return r, fmt.Errorf("seeding APIExports on shard root: %v", errors.Join(err, reportError(rep)))
		}
		l := shardedload.SeedLoad(ws[1], o.StockBound)
		plan.Shards[1] = l
	} else {
		for i, clusters := range ws {
			plan.Shards[i] = shardedload.SeedLoad(clusters, o.Duration)
		}
	}
	c := shardedload.CacheListers(cacheClusters, o.Duration)
	plan.Cache = &c
	o.Logf("evidence: sharded, %s: loading %d shard(s) and the cache server", what, len(plan.Shards))
	out, err := shardedload.Run(ctx, topo, plan)
	if err != nil {
		return r, err
	}
	for i, comp := range topo.Shards {
		r.Shards = append(r.Shards, shardOutcome("shard "+server.ShardName(i), out.Shards[i], comp))
	}
	r.Cache = shardOutcome("cache-server", out.Cache, topo.Cache)
	r.Probes = out.Probes
	for _, sh := range append(r.Shards, r.Cache) {
		o.Logf("evidence: sharded, %s: %s: %s, %.0f LISTs/s", what, sh.Name, sh.Verdict, sh.ListsPerSecond)
	}
	return r, nil
}

func reportError(rep *hammer.Report) error {
	if rep == nil || rep.Error == "" {
		return nil
	}
	return errors.New(rep.Error)
}

func shardOutcome(name string, rep *hammer.Report, c *server.Component) ShardedShard {
	s := ShardedShard{Name: name, Died: c.Died()}
	if f := c.Fatal(); f != nil {
		s.Fatal = f.Signature
	}
	if rep == nil {
		s.Verdict = "not loaded"
		if s.Died {
			s.Verdict = "died"
		}
		return s
	}
	s.Loaded, s.Verdict = true, rep.Verdict
	s.LoadElapsed, s.ListsPerSecond, s.Server5xx = rep.LoadElapsed, shardedload.ListsPerSecond(rep), rep.Server5xx()
	for _, c := range rep.Checks {
		if c.Ran {
			s.Checks = append(s.Checks, ShardedCheck{ID: c.ID, Name: c.Name, Checked: c.Checked, Violations: c.Violations, Values: c.Values})
		}
	}
	if rep.Death.Died {
		s.Died, s.TimeToDeath = true, rep.TimeToDeath
	}
	return s
}

// WriteSharded writes sharded.json and the chart into dir, each through a
// temporary file renamed into place.
func WriteSharded(dir string, s *Sharded) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	var chart bytes.Buffer
	if err := WriteShardedChart(&chart, s); err != nil {
		return fmt.Errorf("the sharded chart: %w", err)
	}
	for name, b := range map[string][]byte{ShardedFile: append(data, '\n'), ShardedChartFile: chart.Bytes()} {
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// ReadSharded reads dir/sharded.json; nil without error when there is none.
func ReadSharded(dir string) (*Sharded, error) {
	data, err := os.ReadFile(filepath.Join(dir, ShardedFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s Sharded
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ShardedFile), err)
	}
	return &s, nil
}

// Shard colors of the sharded chart.
var shardColors = []color.Color{chart.PatchedColor, chart.PristineColor}

// WriteShardedChart draws, for the stock run, the share of the front-proxy's
// answers that were 200 for each shard's workspaces, second by second.
func WriteShardedChart(w io.Writer, s *Sharded) error {
	p := plot.New()
	p.Title.Text = "Stock kcp v0.32.3, two shards: the front-proxy's answers per shard's workspaces\nseed load on shard 1's own endpoint only"
	p.X.Label.Text = "seconds since the probes started"
	p.Y.Label.Text = "probes answered 200 (%)"
	p.Add(plotter.NewGrid())
	p.Y.Min, p.Y.Max = 0, 135
	p.Y.Tick.Marker = chart.WholeTicks{}
	drawn := 0
	for shard := range s.Stock.Shards {
		pts := answerRate(s.Stock.Probes, shard)
		if len(pts) == 0 {
			continue
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.StepStyle = plotter.PostStep
		line.Color = shardColors[shard%len(shardColors)]
		line.Width = vg.Points(1.5)
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
	c := vgsvg.New(chart.Width, chart.Height)
	p.Draw(chart.Margin(draw.New(c)))
	_, err := c.WriteTo(w)
	return err
}

// answerRate is, per second, the share of shard's workspaces' probes that
// were answered 200, in percent; seconds without a probe are left out.
func answerRate(probes []shardedload.ProbeResult, shard int) plotter.XYs {
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

// ShardedMarkdown is the README's sharded section.
func ShardedMarkdown(s *Sharded) string {
	var b strings.Builder
	b.WriteString("kcp v0.32.3's sharded servers (`kcp` ×2 shards, `cache-server`, `virtual-workspaces` ×2, `kcp-front-proxy`), each its own process on 127.0.0.1 (`pkg/harness/server`), built by `make sharded` with the carry and stock. " +
		"Workspaces are created through the front-proxy and placed on a shard; the seed load goes to each shard's own endpoint, a wildcard partial-metadata load (2 listers, a watcher, APIExports) to the cache server, and every workspace is probed through the front-proxy twice a second.\n\n")
	fmt.Fprintf(&b, "Load per loaded shard: %d listers, %d watchers, %d writers; carried: both shards at once for %s; stock: shard 1 only. Run %s, %s of wall time, load average %s.\n\n",
		len(s.Load.Listers), s.Load.Watchers, s.Load.Writers, s.Load.Bound, s.Started.UTC().Format("2006-01-02 15:04 MST"), report.Seconds(s.Elapsed), strings.Join(s.LoadAvg, " → "))
	b.WriteString("![The front-proxy's answers for each shard's workspaces during the stock run](" + ShardedChartFile + ")\n\n")
	b.WriteString("| server | stock: time to death | carried: LIST/s | carried: 5xx | carried: checks (violations of checked) | carried: verdict |\n|---|---|---|---|---|---|\n")
	for i := range s.Carried.Shards {
		c := s.Carried.Shards[i]
		stock := "not loaded, alive"
		if i < len(s.Stock.Shards) {
			st := s.Stock.Shards[i]
			switch {
			case st.Died && st.Loaded:
				stock = report.Seconds(st.TimeToDeath) + " (" + st.Fatal + ")"
			case st.Died:
				stock = "died unloaded"
			case st.Loaded:
				stock = "alive after " + report.Seconds(st.LoadElapsed)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %d | %s | %s |\n", c.Name, stock, c.ListsPerSecond, c.Server5xx, checksCell(c.Checks), c.Verdict)
	}
	cc := s.Carried.Cache
	fmt.Fprintf(&b, "| cache-server | %s (stock; %.0f LIST/s) | %.0f | %d | %s | %s |\n\n", aliveWord(s.Stock.Cache), s.Stock.Cache.ListsPerSecond, cc.ListsPerSecond, cc.Server5xx, checksCell(cc.Checks), cc.Verdict)
	b.WriteString("A check's values are what `kcp.io/original-api-version` said on the items it judged; `<missing>` is no key.\n\n")
	b.WriteString("The front-proxy's answers (200 of all probes) per workspace's logical cluster:\n\n| logical cluster | shard | carried | stock |\n|---|---|---|---|\n")
	for i, c := range s.Carried.Probes {
		stock := "-"
		if i < len(s.Stock.Probes) {
			st := s.Stock.Probes[i]
			stock = fmt.Sprintf("%d/%d", st.OK, st.OK+st.Failed)
			if st.LastFailure != "" {
				stock += "; then `" + truncate(st.LastFailure, 90) + "`"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %d/%d | %s |\n", c.Cluster, server.ShardName(c.Shard), c.OK, c.OK+c.Failed, stock)
	}
	return b.String()
}

// checksCell is "a 12/74776 (<missing>×55441, \"apis.kcp.io/v1alpha2\"×19335), b 0/1632".
func checksCell(cs []ShardedCheck) string {
	var parts []string
	for _, c := range cs {
		part := fmt.Sprintf("%s %d/%d", c.ID, c.Violations, c.Checked)
		if len(c.Values) > 0 {
			var vs []string
			keys := slices.Collect(maps.Keys(c.Values))
			slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(c.Values[b], c.Values[a]), cmp.Compare(a, b)) })
			for _, v := range keys {
				vs = append(vs, fmt.Sprintf("`%s`×%d", v, c.Values[v]))
			}
			part += " (" + strings.Join(vs, ", ") + ")"
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

func aliveWord(s ShardedShard) string {
	if s.Died {
		return "died"
	}
	return "alive"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
