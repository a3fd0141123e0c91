package measure

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
	"github.com/kcp-carry/kcp-carry/pkg/harness/cachemutation"
	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/util/gitexec"
)

// deathGrace is how long a shard the hammer saw die may take to exit (it
// prints every goroutine's stack first).
const deathGrace = 30 * time.Second

// Run measures: the duel, the single-lister rounds, the scaling steps. It
// starts every shard it needs (a fresh one for each duel run and for the
// single-lister rounds, and again after a shard died) and stops them all
// before it returns. The error is
// for what made the measurement impossible (a shard that does not build or
// start, a hammer that cannot seed); what happened to the shards is in the
// report.
func Run(ctx context.Context, o Options) (*report.Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	rep := &report.Report{Schema: report.Schema, Started: start}
	rep.Setup = setup(&o)

	m := &measurer{o: &o}
	defer m.stopAll()
	var err error
	if m.pristine, err = newSlot(ctx, &o, true); err != nil {
		return nil, err
	}
	if m.patched, err = newSlot(ctx, &o, false); err != nil {
		return nil, err
	}
	rep.Setup.Shards = []report.Shard{m.pristine.shard, m.patched.shard}

	// The duel: each shard fresh, the full load.
	load := o.duelLoad()
	rep.Duel.Load = loadOf(load)
	for _, x := range []struct {
		s   *slot
		out *report.Run
	}{{m.pristine, &rep.Duel.Pristine}, {m.patched, &rep.Duel.Patched}} {
		if err := x.s.restart(ctx); err != nil {
			return nil, err
		}
		if *x.out, err = m.run(ctx, x.s, "duel", load, true); err != nil {
			return nil, err
		}
	}

	// One lister, rounds alternating which shard goes first, from two fresh
	// shards: the patched one that served the duel has a longer history
	// (writes, watch cache churn, a grown heap) than a pristine one that
	// just replaced its dead predecessor.
	for _, s := range []*slot{m.pristine, m.patched} {
		if err := s.restart(ctx); err != nil {
			return nil, err
		}
	}
	one := o.stepLoad(1)
	rep.SingleLister.Load = loadOf(one)
	for i := 0; i < o.Rounds; i++ {
		var rd report.Round
		order := []*slot{m.pristine, m.patched}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, s := range order {
			r, err := m.run(ctx, s, fmt.Sprintf("single lister, round %d", i+1), one, false)
			if err != nil {
				return nil, err
			}
			if s == m.pristine {
				rd.Pristine = r
			} else {
				rd.Patched = r
			}
		}
		rep.SingleLister.Rounds = append(rep.SingleLister.Rounds, rd)
	}

	// Listers only, more at each step.
	rep.Scaling.Load = loadOf(o.stepLoad(1))
	for _, n := range o.Steps {
		st := report.Step{Listers: n}
		load := o.stepLoad(n)
		what := fmt.Sprintf("%d %s", n, plural(n, "lister", "listers"))
		if st.Patched, err = m.run(ctx, m.patched, what, load, false); err != nil {
			return nil, err
		}
		if st.Pristine, err = m.run(ctx, m.pristine, what, load, false); err != nil {
			return nil, err
		}
		rep.Scaling.Steps = append(rep.Scaling.Steps, st)
	}

	rep.Notes = notes(rep)
	rep.Setup.LoadAvgAfter = loadAvg()
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// measurer runs the hammer against the shards.
type measurer struct {
	o                 *Options
	pristine, patched *slot
}

func (m *measurer) stopAll() {
	for _, s := range []*slot{m.pristine, m.patched} {
		if s != nil {
			s.stop()
		}
	}
}

func (m *measurer) logf(format string, args ...any) {
	if m.o.Logf != nil {
		m.o.Logf(format, args...)
	}
}

// run runs load against the slot's shard (starting one if there is none)
// and files the outcome; withTimeline keeps the per-second LISTs.
func (m *measurer) run(ctx context.Context, s *slot, what string, load hammer.Options, withTimeline bool) (report.Run, error) {
	sh, err := s.get(ctx)
	if err != nil {
		return report.Run{}, err
	}
	load.Config = sh.Config()
	load.ServerExited = sh.Done()
	rep, err := hammer.Run(ctx, load)
	if err != nil {
		return report.Run{}, fmt.Errorf("%s, %s shard: %w", what, s.variant, err)
	}
	if ctx.Err() != nil {
		return report.Run{}, ctx.Err()
	}
	died := rep.Death.Died || sh.Died()
	var fatal *server.Fatal
	if died {
		select {
		case <-sh.Done():
			fatal = sh.Fatal()
		case <-time.After(deathGrace):
		case <-ctx.Done():
			return report.Run{}, ctx.Err()
		}
		s.stop() // a shard that stopped answering but did not exit goes too
	} else if rep.Error != "" {
		return report.Run{}, fmt.Errorf("%s, %s shard: the hammer failed: %s", what, s.variant, rep.Error)
	}
	r := runOf(s.variant, rep, fatal, withTimeline)
	m.logf("evidence: %-26s %-8s %s", what, s.variant, describeRun(r))
	return r, nil
}

// describeRun is the log line of a run.
func describeRun(r report.Run) string {
	s := fmt.Sprintf("%7.0f LIST/s, %d requests in %s", r.ListsPerSecond(), r.Requests, r.LoadElapsed.Round(10*time.Millisecond))
	if r.Died {
		s += fmt.Sprintf(", DIED %s into the %s", r.TimeToDeath.Round(10*time.Millisecond), r.DeathPhase)
		if r.Fatal != nil {
			s += ": " + r.Fatal.Signature
			if r.Fatal.Where != "" {
				s += " in " + report.ShortFunc(r.Fatal.Where)
			}
		}
	}
	if r.Server5xx > 0 {
		s += fmt.Sprintf(", %d answered 5xx", r.Server5xx)
	}
	if r.Verdict != "clean" && !r.Died {
		s += ", verdict: " + r.Verdict
	}
	return s
}

// runOf files a hammer report.
func runOf(variant string, rep *hammer.Report, fatal *server.Fatal, withTimeline bool) report.Run {
	r := report.Run{
		Variant:     variant,
		Requests:    rep.Requests,
		Failed:      rep.Failed,
		Server5xx:   rep.Server5xx(),
		Lists:       rep.Timeline.Lists(),
		LoadElapsed: rep.LoadElapsed,
		Alive:       rep.LoadElapsed,
		Verdict:     rep.Verdict,
	}
	if rep.Death.Died || fatal != nil {
		r.Died = true
		r.DeathPhase = rep.Death.Phase
		r.TimeToDeath = rep.TimeToDeath
		switch rep.Death.Phase {
		case "load", "probe":
			r.Alive = min(rep.TimeToDeath, rep.LoadElapsed)
		case "seed", "sync":
			r.Alive = 0
		}
	}
	if fatal != nil {
		f := &report.Fatal{Signature: fatal.Signature}
		for _, fr := range fatal.Frames {
			s := fr.Func
			if fr.File != "" {
				// The file's directory is the machine's module cache or GOROOT.
				s += " (" + path.Base(filepath.ToSlash(fr.File)) + ":" + fr.Line + ")"
			}
			f.Frames = append(f.Frames, s)
			if f.Where == "" && !runtimeFrame(fr.Func) {
				f.Where = fr.Func
			}
		}
		r.Fatal = f
	}
	if withTimeline && rep.Timeline != nil {
		for _, b := range rep.Timeline.Buckets {
			r.Timeline = append(r.Timeline, report.Second{Second: b.Second, Span: b.Span, Lists: b.Lists, Errors: b.Errors})
		}
	}
	return r
}

// runtimeFrame says whether fn is the machinery a map throw starts in: the
// runtime's map code, or reflect's map iteration (under encoding/json).
func runtimeFrame(fn string) bool {
	for _, p := range []string{"runtime.", "internal/runtime/", "internal/race.", "reflect."} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// loadOf describes a load.
func loadOf(h hammer.Options) report.Load {
	l := report.Load{Watchers: h.Watchers, Writers: h.Writers, Bound: h.Duration, Budget: h.MaxRequests}
	if h.Writers > 0 {
		l.WriteMode = string(h.WriteMode)
	}
	for _, s := range hammer.ListerShapes(h.ListerShapes, h.Listers) {
		l.Listers = append(l.Listers, s.Name())
	}
	return l
}

// notes are the anomalies a reader must know about.
func notes(rep *report.Report) []string {
	var out []string
	if p := rep.Duel.Pristine; !p.Died {
		out = append(out, fmt.Sprintf("The pristine shard survived the duel's %s: this run did not reproduce the crash (the live suite's control allows 30 s).", report.Seconds(p.LoadElapsed)))
	}
	if p := rep.Duel.Patched; p.Died {
		out = append(out, fmt.Sprintf("The patched shard DIED %s into the duel: %s.", report.Seconds(p.TimeToDeath), p.Fatal.Markdown()))
	} else if p.Verdict != "clean" {
		out = append(out, fmt.Sprintf("The hammer's verdict on the patched shard in the duel: %s.", p.Verdict))
	}
	var patched5xx int64
	patchedDeaths := 0
	add := func(r report.Run) {
		patched5xx += r.Server5xx
		if r.Died {
			patchedDeaths++
		}
	}
	for _, rd := range rep.SingleLister.Rounds {
		add(rd.Patched)
	}
	for _, st := range rep.Scaling.Steps {
		add(st.Patched)
	}
	if patched5xx+rep.Duel.Patched.Server5xx > 0 {
		out = append(out, fmt.Sprintf("The patched shard answered %d requests with 5xx.", patched5xx+rep.Duel.Patched.Server5xx))
	}
	if patchedDeaths > 0 {
		out = append(out, fmt.Sprintf("The patched shard died in %d single-lister or scaling runs.", patchedDeaths))
	}
	if pristine, _ := rep.SingleLister.Totals(); pristine.Deaths > 0 {
		out = append(out, fmt.Sprintf("The pristine shard died in %d of %d single-lister rounds: one lister should not kill it.", pristine.Deaths, len(rep.SingleLister.Rounds)))
	}
	return out
}

// setup records where the measurements run.
func setup(o *Options) report.Setup {
	s := report.Setup{
		Commit:    commit(o.Root),
		Note:      strings.TrimSpace(o.Note),
		Command:   o.Command,
		GoVersion: runtime.Version(),
		GOOS:      runtime.GOOS,
		GOARCH:    runtime.GOARCH,
		CPUs:      runtime.NumCPU(),
		Clusters:  append([]string(nil), o.Clusters...),
		Objects:   o.Objects,
	}
	h := o.hammerOptions()
	s.Annotations = h.Annotations
	for _, r := range h.Resources {
		s.Resources = append(s.Resources, r.Resource)
	}
	s.LoadAvgBefore = loadAvg()
	return s
}

// commit is HEAD's short hash, "+dirty" when tracked files changed; "" when
// git cannot tell.
func commit(root string) string {
	repo := gitexec.Repo{Dir: root}
	out, err := repo.Run(context.Background(), "rev-parse", "--short=12", "HEAD")
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	st, err := repo.Run(context.Background(), "status", "--porcelain", "--untracked-files=no")
	if err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "+dirty"
	}
	return c
}

// loadAvg is /proc/loadavg's first three fields, or "".
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// slot is one variant's shard: built once, started when needed.
type slot struct {
	o       *Options
	variant string
	shard   report.Shard
	binary  string
	cur     *server.Shard
}

func newSlot(ctx context.Context, o *Options, pristine bool) (*slot, error) {
	s := &slot{o: o, variant: report.Patched}
	given := o.PatchedBinary
	v := server.ShardBuild{Pristine: pristine}
	if pristine {
		s.variant, given = report.Pristine, o.PristineBinary
	}
	switch {
	case given != "":
		abs, err := filepath.Abs(given)
		if err != nil {
			return nil, err
		}
		if st, err := os.Stat(abs); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("--%s-binary %s: not an executable file", s.variant, given)
		}
		s.binary, s.shard.Build = abs, "given as --"+s.variant+"-binary"
	default:
		bin, err := (&server.ShardBuilder{RepoRoot: o.Root}).Build(ctx, v)
		if err != nil {
			return nil, fmt.Errorf("the %s test shard: %w", s.variant, err)
		}
		s.binary = bin
		if pristine {
			s.shard.Build = "GOWORK=off go build ./cmd/testshard (the fork as kcp v0.32.3 ships it)"
		} else {
			s.shard.Build = "go build ./cmd/testshard with go.work (the fork with the carry, from .overlay/)"
		}
	}
	s.shard.Variant, s.shard.Binary = s.variant, s.binary
	if rel, err := filepath.Rel(o.Root, s.binary); err == nil && !strings.HasPrefix(rel, "..") {
		s.shard.Binary = filepath.ToSlash(rel)
	}
	return s, nil
}

// get returns the running shard, starting one if there is none (or it died).
func (s *slot) get(ctx context.Context) (*server.Shard, error) {
	if s.cur != nil {
		select {
		case <-s.cur.Done():
			s.stop()
		default:
			return s.cur, nil
		}
	}
	// The fork is measured, not the debugging aid: the cache mutation
	// detector stays off whatever this process's environment says.
	sh, err := server.StartShard(ctx, server.ShardOptions{Binary: s.binary, Env: []string{cachemutation.EnvVar + "="}})
	if err != nil {
		return nil, fmt.Errorf("starting the %s test shard: %w", s.variant, err)
	}
	s.cur = sh
	return sh, nil
}

// restart stops the running shard, if any, and starts a fresh one.
func (s *slot) restart(ctx context.Context) error {
	s.stop()
	_, err := s.get(ctx)
	return err
}

// stop stops the running shard, if any. A shard that died on its own, or
// exits uncleanly when asked, is not an error here: its run recorded it.
func (s *slot) stop() {
	if s.cur == nil {
		return
	}
	if err := s.cur.Stop(); err != nil {
		var unclean *server.UncleanExitError
		if !errors.As(err, &unclean) && s.o.Logf != nil {
			s.o.Logf("evidence: stopping the %s test shard: %v", s.variant, err)
		}
	}
	s.cur = nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
