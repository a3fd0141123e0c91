// Package soak runs a patched kcp under the duel load for a bounded time
// (`make soak`, not in CI) and reports what a long run changes: kcp's RSS and
// goroutines at the start and the end of the load (from its /metrics), the
// requests and errors, and the hammer's checks afterwards.
package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// Options configure a soak.
type Options struct {
	// Binary is the kcp to soak (bin/kcp). Required.
	Binary string
	// Load is the hammer's: the duel load, bounded by Duration (default
	// 10 min) and MaxRequests.
	hammer.Load
	// Workspaces are created under root; with root they are the logical
	// clusters the hammer seeds.
	Workspaces []string
	// Logf receives progress lines; nil discards. Progress receives the
	// hammer's live line.
	Logf     func(format string, args ...any)
	Progress io.Writer
}

// DefaultOptions are `make soak`'s: the duel load for 10 minutes.
func DefaultOptions() Options {
	load := hammer.DefaultLoad()
	load.Duration, load.MaxRequests = 10*time.Minute, 1<<40
	return Options{Load: load, Workspaces: []string{"soak-a", "soak-b"}}
}

// Validate reports what makes a soak impossible before it starts.
func (o *Options) Validate() error {
	if o.Binary == "" {
		return errors.New("soak: no kcp binary")
	}
	if o.Duration <= 0 || o.MaxRequests <= 0 {
		return fmt.Errorf("soak: duration %s and budget %d must be positive", o.Duration, o.MaxRequests)
	}
	return nil
}

// Sample is what /metrics says about the kcp process.
type Sample struct {
	At         time.Time `json:"at"`
	RSSBytes   float64   `json:"rssBytes"`
	Goroutines float64   `json:"goroutines"`
}

// Result is a soak's outcome.
type Result struct {
	Binary   string         `json:"binary"`
	Clusters []string       `json:"clusters"`
	Start    Sample         `json:"start"`
	End      *Sample        `json:"end,omitempty"` // nil if kcp died
	Report   *hammer.Report `json:"report"`
	// Fatal is the fatal line of kcp's output, if any.
	Fatal string `json:"fatal,omitempty"`
}

// Run soaks o.Binary. The error is for what made the soak impossible; a kcp
// that died or a check that failed is in the result (Clean says).
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	dir, err := os.MkdirTemp("", "kcp-carry-soak-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv, clusters, err := server.StartKCPWithWorkspaces(ctx, server.KCPOptions{Binary: o.Binary, RootDir: dir, Progress: logf}, o.Workspaces)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	res := &Result{Binary: o.Binary, Clusters: append([]string{"root"}, clusters...)}

	h := hammer.DefaultOptions()
	h.Config = srv.Config()
	h.Clusters = res.Clusters
	h.Load = o.Load
	h.ServerExited = srv.Done()
	h.Logf = logf
	h.Progress = o.Progress
	// The start sample is taken once the load runs, so the end sample
	// compares like with like: seeded objects, warm caches, open watches.
	startSampled := make(chan error, 1)
	go func() {
		select {
		case <-time.After(min(30*time.Second, o.Duration/4)):
		case <-ctx.Done():
		}
		s, err := sample(ctx, srv)
		res.Start = s
		startSampled <- err
	}()
	logf("soak: the duel load against %s for %s", o.Binary, o.Duration)
	rep, err := hammer.Run(ctx, h)
	if err != nil {
		return nil, err
	}
	if err := <-startSampled; err != nil && !rep.Death.Died {
		return nil, fmt.Errorf("sampling kcp's /metrics at the start: %w", err)
	}
	res.Report = rep
	if !srv.Died() {
		if end, err := sample(ctx, srv); err == nil {
			res.End = &end
		} else {
			logf("soak: sampling kcp's /metrics at the end: %v", err)
		}
	}
	if f := srv.Fatal(); f != nil {
		res.Fatal = f.String()
	}
	return res, nil
}

// Clean says the soak found nothing: kcp alive, the hammer clean, no fatal
// line in kcp's output.
func (r *Result) Clean() bool {
	return r.End != nil && r.Report.ExitCode == hammer.ExitClean && r.Fatal == ""
}

// sample scrapes kcp's /metrics for its RSS and goroutines.
func sample(ctx context.Context, srv *server.KCP) (Sample, error) {
	metrics, err := srv.Metrics(ctx)
	if err != nil {
		return Sample{}, fmt.Errorf("sampling kcp: %w", err)
	}
	s := Sample{At: time.Now()}
	for name, dst := range map[string]*float64{"process_resident_memory_bytes": &s.RSSBytes, "go_goroutines": &s.Goroutines} {
		if !slices.ContainsFunc(metrics, func(m server.Sample) bool { return m.Name == name }) {
			return Sample{}, fmt.Errorf("/metrics has no %s", name)
		}
		*dst = metrics.Sum(name, nil)
	}
	return s, nil
}

// WriteText is the soak's report for people.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	rep := r.Report
	fmt.Fprintf(&b, "soak of %s over %s: %d requests (%d failed, %d answered 5xx) in %s = %.0f req/s, %d successful writes\n",
		r.Binary, strings.Join(r.Clusters, ", "), rep.Requests, rep.Failed, rep.Server5xx(), rep.LoadElapsed.Round(time.Second), rep.ReqPerSec, rep.SuccessfulWrites)
	fmt.Fprintf(&b, "  start (%s into the load): RSS %s, %0.f goroutines\n", r.Start.At.Sub(rep.Started).Round(time.Second), mib(r.Start.RSSBytes), r.Start.Goroutines)
	if r.End != nil {
		fmt.Fprintf(&b, "  end:                     RSS %s, %0.f goroutines\n", mib(r.End.RSSBytes), r.End.Goroutines)
	} else {
		fmt.Fprintf(&b, "  end: kcp DIED %s into the load\n", rep.TimeToDeath.Round(time.Millisecond))
	}
	for _, c := range rep.Checks {
		if !c.Enabled {
			continue // not part of the soak's load
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
	if r.Fatal != "" {
		fmt.Fprintf(&b, "  kcp output: %s\n", r.Fatal)
	}
	verdict := "clean"
	if !r.Clean() {
		verdict = "NOT clean: " + rep.Verdict
	}
	fmt.Fprintf(&b, "verdict: %s\n", verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

func mib(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }
