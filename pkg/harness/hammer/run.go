package hammer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"

	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
)

// run is the state of one hammer run.
type run struct {
	opts   *Options
	c      *client
	rec    *recorder
	death  *deathWatch
	checks []checks.Check
	// observers are the checks fed the partial objects the load receives.
	observers []checks.PartialObserver
	ledger    *checks.Ledger
	objects   []seededObject
	// readBack is what the after-load reads saw (nil when they did not run);
	// readBackSkipped says why they did not.
	readBack        *checks.ReadBack
	readBackSkipped string

	mu      sync.Mutex // guards seed.Deleted
	seed    SeedResult
	created []seededObject

	kcpMetaOnce sync.Once
	kcpMeta     kcpdynamic.ClusterInterface
	kcpMetaErr  error

	partialItems atomic.Int64
	watchEvents  atomic.Int64
}

// Run seeds, loads (or probes), runs the checks and optionally cleans up,
// and reports. The error is for options that cannot run (the CLI's exit 2);
// everything that happens to the server is in the report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg, err := BaseConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	r := &run{opts: &opts, rec: newRecorder(), ledger: checks.NewLedger(GenLabel)}
	r.setChecks(checks.New())
	r.objects = seededObjects(&opts)
	r.death = newDeathWatch(opts.DeathThreshold, nil, cancel)
	if r.c, err = newClient(cfg, r.rec, r.death, opts.RequestTimeout); err != nil {
		return nil, err
	}
	r.death.dial = dialer(r.c.hostport())

	rep := &Report{
		Target: cfg.Host, Mode: "load", Scope: opts.Scope, Clusters: opts.Clusters,
		Watchers: opts.Watchers, MixedWatchers: opts.MixedWatchers, Writers: opts.Writers, WriteMode: string(opts.WriteMode),
		Budget: opts.MaxRequests, Bound: opts.Duration.String(), Started: time.Now(),
	}
	for _, res := range opts.Resources {
		rep.Resources = append(rep.Resources, res.String())
	}
	if opts.SequentialProbe {
		rep.Mode, rep.Scope = "probe", ScopeWildcard
		rep.Watchers, rep.MixedWatchers, rep.Writers, rep.WriteMode, rep.Budget, rep.Bound = 0, 0, 0, "", int64(len(opts.Resources)), ""
	} else {
		for _, s := range ListerShapes(opts.ListerShapes, opts.Listers) {
			rep.Listers = append(rep.Listers, s.Name())
		}
	}

	if opts.ServerExited != nil {
		go func() {
			select {
			case <-opts.ServerExited:
				r.death.exited(time.Now())
			case <-ctx.Done():
			}
		}()
	}

	loadStart, loadElapsed := r.phases(ctx, rep)

	rep.Elapsed = time.Since(rep.Started)
	rep.LoadElapsed = loadElapsed
	rep.Ops = r.rec.snapshot(loadElapsed, "list ", "watch ", "write ")
	rep.SetupOps = r.rec.snapshot(rep.Elapsed, "seed ", "read-back ", "cleanup ")
	for _, o := range rep.Ops {
		rep.Requests += o.Count
		rep.Failed += o.Count - o.OK
	}
	if loadElapsed > 0 {
		rep.ReqPerSec = float64(rep.Requests) / loadElapsed.Seconds()
	}
	rep.Seed = r.seed
	rep.PartialItems = r.partialItems.Load()
	rep.WatchEvents = r.watchEvents.Load()
	rep.SuccessfulWrites = r.ledger.SuccessfulWrites()
	rep.Death = r.death.state()
	obs := observationsOf(&opts)
	obs.Died, obs.Loaded = rep.Death.Died, !loadStart.IsZero()
	obs.ReadBack, obs.ReadBackSkipped, obs.Writes = r.readBack, r.readBackSkipped, r.ledger
	for _, c := range r.checks {
		res := c.Result(obs)
		info := c.Info()
		res.ID, res.Name = info.ID, info.Name
		rep.Checks = append(rep.Checks, res)
	}
	if rep.Death.Died {
		base := rep.Started
		if !loadStart.IsZero() && !rep.Death.At.Before(loadStart) {
			base = loadStart
		}
		rep.TimeToDeath = rep.Death.At.Sub(base)
	}
	rep.finish()
	return rep, nil
}

// observationsOf is what the checks need to know of the run's options.
func observationsOf(opts *Options) *checks.Observations {
	return &checks.Observations{
		Probe: opts.SequentialProbe, Wildcard: opts.Scope == ScopeWildcard,
		Listers: partialListers(opts), Watchers: opts.Watchers, MixedWatchers: opts.MixedWatchers, Writers: opts.Writers,
		NoAfterChecks: opts.NoAfterChecks,
	}
}

// partialListers is how many of the listers send partial-metadata LISTs
// (the others send full-object ones, which check (a) does not judge).
func partialListers(opts *Options) int {
	n := 0
	for _, s := range ListerShapes(opts.ListerShapes, opts.Listers) {
		if s.Accept.Partial() {
			n++
		}
	}
	return n
}

// phases runs seeding, the load or probe, the after-load reads and cleanup,
// filling rep's error; it returns when the load started and how long it ran.
func (r *run) phases(ctx context.Context, rep *Report) (loadStart time.Time, loadElapsed time.Duration) {
	opts := r.opts
	fail := func(format string, args ...any) {
		if rep.Error == "" {
			rep.Error = fmt.Sprintf(format, args...)
		}
	}
	r.readBackSkipped = "skipped: the run ended before the after-load checks"
	if opts.NoAfterChecks {
		r.readBackSkipped = "--no-after-checks"
	}

	if !opts.NoSeed {
		r.phase("seed")
		if err := r.seedObjects(ctx); err != nil && !r.death.dead() {
			fail("seeding: %v", err)
			return
		}
	}
	r.phase("sync")
	if err := r.waitForCache(ctx); err != nil && !r.death.dead() {
		fail("%v", err)
		return
	}
	if r.death.dead() {
		return
	}

	loadStart = time.Now()
	r.rec.startTimeline(loadStart, "list ", "watch ", "write ")
	if opts.SequentialProbe {
		r.phase("probe")
		probe, err := requestshape.Parse(opts.ProbeMetaVersion + ":" + opts.ProbeResourceVersion)
		if err != nil {
			fail("probe: %v", err)
			return
		}
		for _, res := range opts.Resources {
			if err := r.listHTTP(ctx, r.c, listerShape{probe}, res, "*"); err != nil {
				fail("probe: %v", err)
				break
			}
		}
	} else {
		r.phase("load")
		r.load(ctx)
	}
	loadElapsed = time.Since(loadStart)
	rep.Timeline = r.rec.stopTimeline(loadElapsed)

	if !opts.NoAfterChecks && !r.death.dead() && ctx.Err() == nil {
		r.phase("after-checks")
		r.readBack = r.readObjectsBack(ctx)
	}
	if opts.Cleanup && !r.death.dead() && ctx.Err() == nil {
		r.phase("cleanup")
		if err := r.cleanup(ctx); err != nil {
			fail("cleanup: %v", err)
		}
	}
	return loadStart, loadElapsed
}

func (r *run) phase(p string) {
	r.death.setPhase(p)
	if r.opts.Logf != nil {
		r.opts.Logf("hammer: %s", p)
	}
}

// load runs the listers, watchers and writers until the duration bound, the
// request budget, or the server's death.
func (r *run) load(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Duration)
	defer cancel()
	c := r.c.withBudget(newBudget(r.opts.MaxRequests))
	var wg sync.WaitGroup
	for _, s := range ListerShapes(r.opts.ListerShapes, r.opts.Listers) {
		wg.Go(func() { r.lister(ctx, c, listerShape{s}) })
	}
	for i := 0; i < r.opts.Watchers; i++ {
		s := requestshape.HammerWatchers[i%len(requestshape.HammerWatchers)]
		wg.Go(func() { r.watcher(ctx, c, s) })
	}
	for g := 0; g < r.opts.MixedWatchers; g++ {
		wg.Go(func() { r.mixedWatchers(ctx, c, g) })
	}
	for w := 0; w < r.opts.Writers; w++ {
		wg.Go(func() { r.writer(ctx, c, w, r.opts.Writers) })
	}
	stop := r.progress()
	wg.Wait()
	stop()
}

// CleanupAll deletes, in every logical cluster of opts, each object of
// opts.Resources that carries OwnedLabel and whose name starts with
// opts.Prefix: what earlier runs left behind. It returns how many it deleted.
func CleanupAll(ctx context.Context, opts Options) (int, error) {
	check := opts
	check.SequentialProbe = true // a cleanup needs no workers
	if err := check.Validate(); err != nil {
		return 0, err
	}
	cfg, err := BaseConfig(opts.Config)
	if err != nil {
		return 0, err
	}
	r := &run{opts: &opts, rec: newRecorder(), ledger: checks.NewLedger(GenLabel)}
	r.death = newDeathWatch(opts.DeathThreshold, func(context.Context) error { return nil }, nil)
	if r.c, err = newClient(cfg, r.rec, r.death, opts.RequestTimeout); err != nil {
		return 0, err
	}
	err = r.cleanupAll(ctx)
	return r.seed.Deleted, err
}

// setChecks installs the run's checks and the observers among them.
func (r *run) setChecks(all []checks.Check) {
	r.checks = all
	r.observers = nil
	for _, c := range all {
		if o, ok := c.(checks.PartialObserver); ok {
			r.observers = append(r.observers, o)
		}
	}
}

// observe hands a partial item a worker of the load received (op, in
// cluster, "*" for a wildcard request) to every check that judges such items.
func (r *run) observe(op string, worker checks.Worker, res Resource, cluster string, m partialMeta) {
	seen := checks.Partial{
		Op: op, Worker: worker, Cluster: cluster,
		Item:               checks.ObjectKey{Resource: res.Resource, Cluster: m.Annotations.Cluster, Namespace: m.Namespace, Name: m.Name},
		OriginalAPIVersion: m.Annotations.OriginalAPIVersion,
		Want:               res.originalAPIVersion(),
	}
	for _, o := range r.observers {
		o.ObservePartial(seen)
	}
}
