// Package soak runs one or more kcps side by side, each under its own
// hammer load, for a bounded time (`make soak`, not in CI), and records what
// a long run does to their memory: every Interval kcp's RSS, Go heap in use
// and heap objects, goroutines (its /metrics), its embedded etcd's database
// size and revision, and its watch caches' capacity; heap profiles
// (/debug/pprof/heap) at ProfileAt and at the end, and their differences;
// then the hammer's checks. Output goes to OutDir: soak.json, the profiles,
// and SVG charts of the series.
package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// Variant is one kcp of a soak and its load's shape.
type Variant struct {
	// Name names the variant in the output ("carried", "stock-nocache").
	Name string `json:"name"`
	// Binary is the kcp binary. Required.
	Binary string `json:"binary"`
	// Args are extra flags for `kcp start` (--watch-cache=false).
	Args []string `json:"args,omitempty"`
	// ListerShapes are the listers' request shapes, cycled; empty is the
	// hammer's default mix of wildcard partial-metadata LISTs.
	ListerShapes []requestshape.Shape `json:"-"`
}

// Options configure a soak.
type Options struct {
	// Variants are the kcps, run side by side. Required.
	Variants []Variant
	// Load is the hammer's, the same for every variant, bounded by Duration
	// (default 30 min) and MaxRequests.
	hammer.Load
	// Resources are what the hammer seeds, lists and writes.
	Resources []hammer.Resource
	// Workspaces are created under root in each kcp; with root they are the
	// logical clusters the hammer seeds.
	Workspaces []string
	// Interval is the time between samples (default 30 s).
	Interval time.Duration
	// ProfileAt are the times (since the hammer started) of the heap
	// profiles before the one at the end; those past Duration are skipped.
	ProfileAt []time.Duration
	// OutDir receives soak.json, each variant's heap profiles
	// (<variant>/heap-<label>.pb.gz) and the charts. Required.
	OutDir string
	// Logf receives progress lines; nil discards. Progress receives the
	// hammer's live line when there is one variant.
	Logf     func(format string, args ...any)
	Progress io.Writer
}

// DefaultOptions are `make soak`'s: the seed load (8 wildcard
// partial-metadata listers and 4 label writers over 50 ClusterRoles per
// logical cluster) for 30 minutes, sampled every 30 s, heap profiles at
// 2 and 10 minutes and the end.
func DefaultOptions() Options {
	load := hammer.DefaultLoad()
	load.Watchers = 0
	load.Duration, load.MaxRequests = 30*time.Minute, 1<<40
	return Options{
		Load:       load,
		Resources:  []hammer.Resource{hammer.ClusterRoles},
		Workspaces: []string{"soak-a", "soak-b"},
		Interval:   30 * time.Second,
		ProfileAt:  []time.Duration{2 * time.Minute, 10 * time.Minute},
	}
}

// Validate reports what makes a soak impossible before it starts.
func (o *Options) Validate() error {
	var errs []error
	if len(o.Variants) == 0 {
		errs = append(errs, errors.New("soak: no kcp"))
	}
	names := map[string]bool{}
	for _, v := range o.Variants {
		switch {
		case v.Binary == "":
			errs = append(errs, fmt.Errorf("soak: variant %q has no kcp binary", v.Name))
		case v.Name == "" || strings.ContainsAny(v.Name, `/\ =:`):
			errs = append(errs, fmt.Errorf("soak: %q cannot name a variant (a file name without /, space, = or :)", v.Name))
		case names[v.Name]:
			errs = append(errs, fmt.Errorf("soak: two variants named %q", v.Name))
		}
		names[v.Name] = true
		for _, s := range v.ListerShapes {
			if err := hammer.CheckListerShape(s); err != nil {
				errs = append(errs, fmt.Errorf("soak: variant %s: %w", v.Name, err))
			}
		}
	}
	if o.Duration <= 0 || o.MaxRequests <= 0 {
		errs = append(errs, fmt.Errorf("soak: duration %s and budget %d must be positive", o.Duration, o.MaxRequests))
	}
	if o.Interval <= 0 {
		errs = append(errs, fmt.Errorf("soak: sample interval %s must be positive", o.Interval))
	}
	for _, at := range o.ProfileAt {
		if at <= 0 {
			errs = append(errs, fmt.Errorf("soak: a heap profile at %s: must be positive", at))
		}
	}
	if len(o.Resources) == 0 {
		errs = append(errs, errors.New("soak: no resources"))
	}
	if o.OutDir == "" {
		errs = append(errs, errors.New("soak: no output directory"))
	}
	return errors.Join(errs...)
}

// Result is a soak's outcome.
type Result struct {
	Load      hammer.Load   `json:"load"`
	Resources []string      `json:"resources"`
	Interval  time.Duration `json:"intervalNanos"`
	Started   time.Time     `json:"started"`
	Variants  []*VariantRun `json:"variants"`
}

// VariantRun is what one kcp did in the soak.
type VariantRun struct {
	Variant
	Listers  []string `json:"listers"`
	Clusters []string `json:"clusters"`
	Version  string   `json:"version,omitempty"`
	// Samples are taken every Interval from the hammer's start, and once
	// after the load.
	Samples  []Sample      `json:"samples"`
	Profiles []HeapProfile `json:"profiles"`
	// Diffs compare each earlier profile with the last.
	Diffs  []HeapDiff     `json:"diffs"`
	Report *hammer.Report `json:"report,omitempty"`
	// Fatal is the fatal line of kcp's output, if any; Error what kept
	// this variant from running.
	Fatal       string `json:"fatal,omitempty"`
	Error       string `json:"error,omitempty"`
	etcdMetrics string
	// SampleErrors counts samples that failed (the first is in Error when
	// none succeeded).
	SampleErrors int `json:"sampleErrors,omitempty"`
}

// Alive says the kcp lived through the load and was sampled after it.
func (v *VariantRun) Alive() bool {
	return v.Error == "" && v.Report != nil && !v.Report.Death.Died && v.Fatal == "" && len(v.Samples) > 0
}

// Run soaks every variant side by side. The error is for what made the soak
// impossible (a kcp that did not start, an output directory that cannot be
// written); a kcp that died or a check that failed is in the result (Clean
// says).
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("soak: the output directory: %w", err)
	}
	res := &Result{Load: o.Load, Interval: o.Interval}
	for _, r := range o.Resources {
		res.Resources = append(res.Resources, r.String())
	}
	var servers []*server.KCP
	defer func() {
		for _, s := range servers {
			_ = s.Stop()
			_ = os.RemoveAll(s.RootDir())
		}
	}()
	for _, v := range o.Variants {
		dir, err := os.MkdirTemp("", "kcp-carry-soak-"+v.Name+"-")
		if err != nil {
			return nil, fmt.Errorf("soak: %s: %w", v.Name, err)
		}
		// The embedded etcd's own metrics listener: kcp's /metrics has no
		// etcd_* (etcd registers them with Prometheus' default registry).
		ports, err := server.FreePorts(1)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("soak: %s: %w", v.Name, err)
		}
		etcdMetrics := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		args := append([]string{"--embedded-etcd-listen-metrics-urls=" + etcdMetrics}, v.Args...)
		srv, clusters, err := server.StartKCPWithWorkspaces(ctx, server.KCPOptions{Binary: v.Binary, RootDir: dir, Args: args, Progress: logf}, o.Workspaces)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("soak: starting %s (%s %s): %w", v.Name, v.Binary, strings.Join(v.Args, " "), err)
		}
		servers = append(servers, srv)
		run := &VariantRun{Variant: v, Clusters: append([]string{"root"}, clusters...), etcdMetrics: etcdMetrics + "/metrics"}
		for _, s := range hammer.ListerShapes(v.ListerShapes, o.Listers) {
			run.Listers = append(run.Listers, s.Name())
		}
		run.Version = kcpVersion(srv)
		res.Variants = append(res.Variants, run)
	}
	res.Started = time.Now()
	logf("soak: %d kcp(s) side by side for %s, sampled every %s, output in %s", len(servers), o.Duration, o.Interval, o.OutDir)
	var wg sync.WaitGroup
	for i, srv := range servers {
		wg.Go(func() { soakOne(ctx, o, srv, res.Variants[i], logf) })
	}
	wg.Wait()
	for _, srv := range servers {
		_ = srv.Stop()
	}
	if err := res.write(o.OutDir); err != nil {
		return res, err
	}
	return res, nil
}

// soakOne runs the hammer on one kcp, sampling it every Interval and
// taking its heap profiles, and diffs the profiles at the end.
func soakOne(ctx context.Context, o Options, srv *server.KCP, run *VariantRun, logf func(string, ...any)) {
	h := hammer.DefaultOptions()
	h.Config = srv.Config()
	h.Clusters = run.Clusters
	h.Resources = o.Resources
	h.Load = o.Load
	h.ListerShapes = run.ListerShapes
	h.Prefix = "soak-"
	h.ServerExited = srv.Done()
	h.Logf = func(format string, args ...any) { logf(run.Name+": "+format, args...) }
	if len(o.Variants) == 1 {
		h.Progress = o.Progress
	}
	p := &sampler{srv: srv, started: time.Now(), etcdMetrics: run.etcdMetrics}
	var profiles []profileData
	takeProfile := func(label string) {
		at := time.Since(p.started)
		data, err := fetchHeap(ctx, srv)
		if err != nil {
			logf("soak: %s: heap profile %s: %v", run.Name, label, err)
			return
		}
		prof := HeapProfile{Label: label, At: at, File: filepath.Join(run.Name, "heap-"+label+".pb.gz")}
		if prof.InuseBytes, prof.InuseObjects, err = heapTotals(data); err != nil {
			logf("soak: %s: heap profile %s: %v", run.Name, label, err)
			return
		}
		if err := writeFile(filepath.Join(o.OutDir, prof.File), data); err != nil {
			logf("soak: %s: %v", run.Name, err)
			return
		}
		run.Profiles = append(run.Profiles, prof)
		profiles = append(profiles, profileData{label, data})
	}
	takeSample := func() {
		s, err := p.sample(ctx)
		if err != nil {
			run.SampleErrors++
			logf("soak: %s: %v", run.Name, err)
			return
		}
		run.Samples = append(run.Samples, s)
		logf("soak: %s at %s: RSS %s (anon %s, file %s), heap in use %s, %0.f heap objects, %0.f goroutines, etcd db %s at revision %0.f, watch cache capacity %0.f",
			run.Name, s.At.Round(time.Second), mib(s.RSSBytes), mib(s.RSSAnonBytes), mib(s.RSSFileBytes), mib(s.HeapInuseBytes), s.HeapObjects, s.Goroutines, mib(s.EtcdDBBytes), s.EtcdRevision, s.WatchCacheCapacity)
	}

	done := make(chan struct{})
	var loop sync.WaitGroup
	loop.Go(func() {
		// One goroutine samples and profiles, in turn: a 1 s tick, a
		// sample when one is due, a profile when its time has come.
		due := map[string]time.Duration{}
		for _, at := range o.ProfileAt {
			if at < o.Duration {
				due[label(at)] = at
			}
		}
		next := time.Duration(0)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			if at := time.Since(p.started); at >= next {
				takeSample()
				next += o.Interval
			}
			for l, at := range due {
				if time.Since(p.started) >= at {
					takeProfile(l)
					delete(due, l)
				}
			}
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-srv.Done():
				return
			case <-tick.C:
			}
		}
	})
	rep, err := hammer.Run(ctx, h)
	close(done)
	loop.Wait()
	if err != nil {
		run.Error = err.Error()
		return
	}
	// The hammer's per-second timeline of a 30-minute load is most of a
	// soak.json and says nothing about memory: the counts stay, it goes.
	rep.Timeline = nil
	run.Report = rep
	if !srv.Died() {
		takeSample()
		takeProfile("end")
	}
	if f := srv.Fatal(); f != nil {
		run.Fatal = f.String()
	}
	var err2 error
	if run.Diffs, err2 = diffAll(profiles); err2 != nil {
		logf("soak: %s: %v", run.Name, err2)
	}
}

// diffAll diffs each profile but the last against the last.
func diffAll(profiles []profileData) ([]HeapDiff, error) {
	var out []HeapDiff
	if len(profiles) < 2 {
		return nil, nil
	}
	last := profiles[len(profiles)-1]
	for _, base := range profiles[:len(profiles)-1] {
		d, err := DiffHeap(base.data, last.data, 15)
		if err != nil {
			return out, fmt.Errorf("heap %s → %s: %w", base.label, last.label, err)
		}
		d.Base, d.End = base.label, last.label
		out = append(out, d)
	}
	return out, nil
}

// Redraw reads a soak's output directory again: soak.json, the heap
// profiles it names (diffed again), and draws the charts anew.
func Redraw(dir string) (*Result, error) {
	r, err := ReadResult(filepath.Join(dir, ResultFile))
	if err != nil {
		return nil, err
	}
	for _, v := range r.Variants {
		var profiles []profileData
		for _, p := range v.Profiles {
			data, err := os.ReadFile(filepath.Join(dir, p.File))
			if err != nil {
				return nil, fmt.Errorf("soak: %s: %w", v.Name, err)
			}
			profiles = append(profiles, profileData{p.Label, data})
		}
		if v.Diffs, err = diffAll(profiles); err != nil {
			return nil, fmt.Errorf("soak: %s: %w", v.Name, err)
		}
	}
	return r, r.write(dir)
}

type profileData struct {
	label string
	data  []byte
}

// label names a profile by its time: "2m", "90s".
func label(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return strings.TrimSuffix(d.Round(time.Second).String(), "0m0s")
}

// kcpVersion is the server's /version gitVersion, or "" when it does not say.
func kcpVersion(srv *server.KCP) string {
	c, err := discoveryOf(srv)
	if err != nil {
		return ""
	}
	v, err := c.ServerVersion()
	if err != nil {
		return ""
	}
	return v.GitVersion
}

// Clean says the soak found nothing: every kcp alive, every hammer clean,
// no fatal line in any kcp's output.
func (r *Result) Clean() bool {
	for _, v := range r.Variants {
		if !v.Alive() || v.Report.ExitCode != hammer.ExitClean {
			return false
		}
	}
	return len(r.Variants) > 0
}

func mib(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }

// ParseVariants builds the variants from the command line's spellings:
// kcps are `NAME=BINARY` or `BINARY` (named by its file name); args are
// `NAME=ARG`, one flag of `kcp start` for the variant NAME; shapes are
// `NAME=SHAPE,...` for one variant or `SHAPE,...` for every variant without
// its own (hammer.ParseListerShapes).
func ParseVariants(kcps, args, shapes []string) ([]Variant, error) {
	var out []Variant
	index := map[string]int{}
	for _, k := range kcps {
		name, bin, ok := strings.Cut(k, "=")
		if !ok {
			name, bin = filepath.Base(k), k
		}
		if _, dup := index[name]; dup {
			return nil, fmt.Errorf("--kcp %s: a second kcp named %q", k, name)
		}
		index[name] = len(out)
		out = append(out, Variant{Name: name, Binary: bin})
	}
	find := func(flag, spec, name string) (*Variant, error) {
		i, ok := index[name]
		if !ok {
			return nil, fmt.Errorf("--%s %s: no --kcp named %q", flag, spec, name)
		}
		return &out[i], nil
	}
	for _, a := range args {
		name, arg, ok := strings.Cut(a, "=")
		if !ok || arg == "" {
			return nil, fmt.Errorf("--kcp-arg %s: want NAME=ARG", a)
		}
		v, err := find("kcp-arg", a, name)
		if err != nil {
			return nil, err
		}
		v.Args = append(v.Args, arg)
	}
	var common []requestshape.Shape
	own := map[string]bool{}
	for _, s := range shapes {
		name, list, named := strings.Cut(s, "=")
		if !named {
			list = s
		}
		parsed, err := hammer.ParseListerShapes(list)
		if err != nil {
			return nil, fmt.Errorf("--lister-shapes %s: %w", s, err)
		}
		if !named {
			common = parsed
			continue
		}
		v, err := find("lister-shapes", s, name)
		if err != nil {
			return nil, err
		}
		v.ListerShapes, own[name] = parsed, true
	}
	for i := range out {
		if !own[out[i].Name] {
			out[i].ListerShapes = common
		}
	}
	return out, nil
}
