package measure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// KCPOptions configure the measurements on real kcp: the duel load of
// Options against each kcp binary, then the single-client ratio.
type KCPOptions struct {
	// PatchedBinary (bin/kcp) and PristineBinary (bin/kcp-pristine) are
	// kcp builds with and without the carry (carry build [--pristine]).
	PatchedBinary  string
	PristineBinary string
	// Ratio configures the single-client rounds.
	Ratio RatioOptions
	// Logf receives a line per run; nil discards.
	Logf func(format string, args ...any)
	// HammerLogf receives the hammer's phase messages; nil discards.
	HammerLogf func(format string, args ...any)
}

// RatioOptions configure the single-client ratios on real kcp, one per
// entry of Annotations: Objects ClusterRoles spread over Workspaces logical
// clusters (root and Workspaces-1 new workspaces), each with that many extra
// annotations; Rounds rounds alternating which kcp goes first, each
// measuring one client's wildcard partial-metadata LISTs (Lister) and its
// full-object LISTs of the same objects for Duration each.
type RatioOptions struct {
	Objects     int
	Workspaces  int
	Annotations []int
	Rounds      int
	Duration    time.Duration
	Lister      requestshape.Shape
}

// DefaultRatioOptions are `make evidence`'s.
func DefaultRatioOptions() RatioOptions {
	return RatioOptions{
		Objects:     150,
		Workspaces:  3,
		Annotations: []int{hammer.DefaultOptions().Annotations},
		Rounds:      6,
		Duration:    10 * time.Second,
		Lister:      requestshape.KCPRatioLister,
	}
}

// Validate names the flag of the first bad option.
func (r RatioOptions) Validate() error {
	var errs []error
	if r.Objects < 1 || r.Objects > 100000 {
		errs = append(errs, fmt.Errorf("--kcp-objects: must be in [1, 100000], got %d", r.Objects))
	}
	if r.Workspaces < 1 || r.Workspaces > 20 {
		errs = append(errs, fmt.Errorf("--kcp-workspaces: must be in [1, 20], got %d", r.Workspaces))
	}
	if len(r.Annotations) == 0 || len(r.Annotations) > maxAnnotationCounts {
		errs = append(errs, fmt.Errorf("--kcp-annotations: want 1 to %d counts, got %d", maxAnnotationCounts, len(r.Annotations)))
	}
	for _, a := range r.Annotations {
		if a < 0 || a > 100 {
			errs = append(errs, fmt.Errorf("--kcp-annotations: each must be in [0, 100], got %d", a))
		}
	}
	if r.Rounds < 1 || r.Rounds > 50 {
		errs = append(errs, fmt.Errorf("--kcp-rounds: must be in [1, 50], got %d", r.Rounds))
	}
	if r.Duration <= 0 || r.Duration > maxDuration {
		errs = append(errs, fmt.Errorf("--kcp-duration: must be in (0, %s], got %s", maxDuration, r.Duration))
	}
	if err := hammer.CheckListerShape(r.Lister); err != nil {
		errs = append(errs, fmt.Errorf("--kcp-lister: %w", err))
	} else if r.Lister.KCPMetadataClient || r.Lister.Paged {
		errs = append(errs, fmt.Errorf("--kcp-lister: want a plain v1 or v1beta1 lister, got %s", r.Lister.Name()))
	}
	return errors.Join(errs...)
}

// maxAnnotationCounts bounds the ratios one run measures (each seeds both
// kcps afresh).
const maxAnnotationCounts = 4

// kcpWorkspaceNames are the workspaces the measurements create under root.
func kcpWorkspaceNames(n int) []string {
	var names []string
	for i := 1; i < n; i++ {
		names = append(names, fmt.Sprintf("evidence-%d", i))
	}
	return names
}

// kcpSlot is one kcp binary and its running server, if any.
type kcpSlot struct {
	variant string
	binary  string
	args    []string      // added to `kcp start`
	ready   time.Duration // bounds kcp's start (default server.KCPReadyTimeout)
	work    string
	n       int
	srv     *server.KCP
	logf    func(string, ...any)
}

// fresh stops the running kcp, if any, and starts one on a new root
// directory with the workspaces; it returns the logical clusters.
func (s *kcpSlot) fresh(ctx context.Context, workspaces int) ([]string, error) {
	s.stop()
	s.n++
	dir := filepath.Join(s.work, fmt.Sprintf("%s-%d", s.variant, s.n))
	srv, clusters, err := server.StartKCPWithWorkspaces(ctx, server.KCPOptions{Binary: s.binary, RootDir: dir, Args: s.args, ReadyTimeout: s.ready, Progress: s.logf}, kcpWorkspaceNames(workspaces))
	if err != nil {
		return nil, fmt.Errorf("%s kcp: %w", s.variant, err)
	}
	s.srv = srv
	return append([]string{"root"}, clusters...), nil
}

func (s *kcpSlot) stop() {
	if s.srv != nil {
		_ = s.srv.Stop()
		s.srv = nil
	}
}

func newKCPSlots(k *KCPOptions) (pristine, patched *kcpSlot, cleanup func(), err error) {
	work, err := os.MkdirTemp("", "kcp-carry-evidence-kcp-")
	if err != nil {
		return nil, nil, nil, err
	}
	logf := k.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	pristine = &kcpSlot{variant: report.Pristine, binary: k.PristineBinary, work: work, logf: logf}
	patched = &kcpSlot{variant: report.Patched, binary: k.PatchedBinary, work: work, logf: logf}
	cleanup = func() {
		pristine.stop()
		patched.stop()
		_ = os.RemoveAll(work)
	}
	for _, s := range []*kcpSlot{pristine, patched} {
		if _, err := os.Stat(s.binary); err != nil {
			cleanup()
			return nil, nil, nil, fmt.Errorf("the %s kcp binary: %w", s.variant, err)
		}
	}
	return pristine, patched, cleanup, nil
}

// RunKCP measures on real kcp: the duel load of o against a fresh stock and
// a fresh patched kcp (root plus o.Clusters-many-minus-one workspaces), then
// the single-client ratio.
func RunKCP(ctx context.Context, o Options, k KCPOptions) (*report.RealKCP, error) {
	if err := k.Ratio.Validate(); err != nil {
		return nil, err
	}
	pristine, patched, cleanup, err := newKCPSlots(&k)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	out := &report.RealKCP{Binaries: []report.Shard{
		{Variant: report.Pristine, Binary: k.PristineBinary, Build: "carry build --kcp-source <kcp v0.32.3> --cmd cmd/kcp --pristine"},
		{Variant: report.Patched, Binary: k.PatchedBinary, Build: "carry build --kcp-source <kcp v0.32.3> --cmd cmd/kcp"},
	}}
	load := o.duelLoad()
	load.Logf = k.HammerLogf
	out.Duel.Load = loadOf(load)
	for _, x := range []struct {
		s   *kcpSlot
		out *report.Run
	}{{pristine, &out.Duel.Pristine}, {patched, &out.Duel.Patched}} {
		clusters, err := x.s.fresh(ctx, len(o.Clusters))
		if err != nil {
			return nil, err
		}
		out.Clusters = clusters
		l := load
		l.Clusters = clusters
		if *x.out, err = runOnKCP(ctx, x.s, "kcp duel", l, k.Logf); err != nil {
			return nil, err
		}
		x.s.stop()
	}
	if out.Ratios, err = measureRatios(ctx, pristine, patched, k); err != nil {
		return nil, err
	}
	return out, nil
}

// runOnKCP runs a load against the slot's kcp and files it.
func runOnKCP(ctx context.Context, s *kcpSlot, what string, load hammer.Options, logf func(string, ...any)) (report.Run, error) {
	load.Config = s.srv.Config()
	load.ServerExited = s.srv.Done()
	rep, err := hammer.Run(ctx, load)
	if err != nil {
		return report.Run{}, fmt.Errorf("%s, %s kcp: %w", what, s.variant, err)
	}
	var fatal *server.Fatal
	if rep.Death.Died || s.srv.Died() {
		select {
		case <-s.srv.Done():
			fatal = s.srv.Fatal()
		case <-time.After(deathGrace):
		case <-ctx.Done():
			return report.Run{}, ctx.Err()
		}
	} else if rep.Error != "" {
		return report.Run{}, fmt.Errorf("%s, %s kcp: the hammer failed: %s", what, s.variant, rep.Error)
	}
	r := runOf(s.variant, rep, fatal, true)
	if logf != nil {
		logf("evidence: %-26s %-8s %s", what, s.variant, describeRun(r))
	}
	return r, nil
}

// measureRatios measures one ratio per annotation count.
func measureRatios(ctx context.Context, pristine, patched *kcpSlot, k KCPOptions) ([]report.KCPRatio, error) {
	var out []report.KCPRatio
	for _, annotations := range k.Ratio.Annotations {
		r, err := measureRatio(ctx, pristine, patched, k, annotations)
		if err != nil {
			return nil, fmt.Errorf("single client, %d annotations: %w", annotations, err)
		}
		out = append(out, *r)
	}
	return out, nil
}

// measureRatio starts both kcps fresh, seeds the same objects, each with
// annotations extra annotations, into both, and runs the rounds.
func measureRatio(ctx context.Context, pristine, patched *kcpSlot, k KCPOptions, annotations int) (*report.KCPRatio, error) {
	ro := k.Ratio
	perCluster := (ro.Objects + ro.Workspaces - 1) / ro.Workspaces
	out := &report.KCPRatio{Objects: perCluster * ro.Workspaces, Workspaces: ro.Workspaces, Annotations: annotations, Lister: ro.Lister.Name(), Bound: ro.Duration}
	seed := clusterRoleSeed{perCluster: perCluster, annotations: annotations, syncTimeout: 5 * time.Minute, logf: k.HammerLogf}
	for _, s := range []*kcpSlot{pristine, patched} {
		clusters, err := s.fresh(ctx, ro.Workspaces)
		if err != nil {
			return nil, err
		}
		seeded, err := seed.into(ctx, s, clusters)
		if err != nil {
			return nil, err
		}
		if k.Logf != nil {
			k.Logf("evidence: seeded %d ClusterRoles (%d annotations each) in %d logical clusters of the %s kcp", seeded, annotations, len(clusters), s.variant)
		}
	}
	for i := 0; i < ro.Rounds; i++ {
		order := []*kcpSlot{pristine, patched}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		rd := report.KCPRound{First: order[0].variant}
		partial := map[string]report.Rated{}
		full := map[string]report.Rated{}
		for _, s := range order {
			p, err := partialRate(ctx, s, ro)
			if err != nil {
				return nil, err
			}
			f, err := fullRate(ctx, s, ro)
			if err != nil {
				return nil, err
			}
			partial[s.variant], full[s.variant] = p, f
		}
		rd.Partial = report.RatePair{Pristine: partial[report.Pristine], Patched: partial[report.Patched]}
		rd.Full = report.RatePair{Pristine: full[report.Pristine], Patched: full[report.Patched]}
		if k.Logf != nil {
			k.Logf("evidence: kcp round %d, %d annotations (%s first): partial %.1f / %.1f LIST/s = %.3f, full %.1f / %.1f LIST/s = %.3f", i+1, annotations, rd.First,
				rd.Partial.Patched.ListsPerSecond(), rd.Partial.Pristine.ListsPerSecond(), rd.Partial.Ratio(),
				rd.Full.Patched.ListsPerSecond(), rd.Full.Pristine.ListsPerSecond(), rd.Full.Ratio())
		}
		out.Rounds = append(out.Rounds, rd)
	}
	return out, nil
}

// partialRate is one client's wildcard partial-metadata LISTs of the
// ClusterRoles (ro.Lister's shape) for ro.Duration.
func partialRate(ctx context.Context, s *kcpSlot, ro RatioOptions) (report.Rated, error) {
	return listRate(ctx, s, ro, ro.Lister, "partial LISTs")
}

// fullRate is the same client's wildcard full-object LISTs of the
// ClusterRoles: the partial LIST's shape, asking for full objects.
func fullRate(ctx context.Context, s *kcpSlot, ro RatioOptions) (report.Rated, error) {
	full := ro.Lister
	full.Accept = requestshape.JSON
	return listRate(ctx, s, ro, full, "full-object LISTs")
}

// listRate sends one LIST of shape after the other for ro.Duration and
// counts the answered ones. The client work is the same for partial and
// full objects, so that their rates compare: read the whole body and
// discard it. Decoding it in the client, on the same 2 cores as kcp, made
// the rounds' ratios spread from 0.70 to 1.27.
func listRate(ctx context.Context, s *kcpSlot, ro RatioOptions, shape requestshape.Shape, what string) (report.Rated, error) {
	cfg := s.srv.Config()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return report.Rated{}, err
	}
	url := cfg.Host + "/clusters/*/apis/rbac.authorization.k8s.io/v1/clusterroles"
	if q := shape.Query(requestshape.Params{}).Encode(); q != "" {
		url += "?" + q
	}
	var lists, failed int64
	start := time.Now()
	for time.Since(start) < ro.Duration {
		if err := ctx.Err(); err != nil {
			return report.Rated{}, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return report.Rated{}, err
		}
		req.Header.Set("Accept", shape.AcceptHeader())
		resp, err := hc.Do(req)
		if err != nil {
			failed++
			if s.srv.Died() {
				return report.Rated{}, fmt.Errorf("%s: the %s kcp died", what, s.variant)
			}
			continue
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || n == 0 {
			failed++
			continue
		}
		lists++
	}
	return report.Rated{Lists: lists, Failed: failed, Elapsed: time.Since(start)}, nil
}

// clusterRoleSeed is the same ClusterRoles seeded into each kcp a
// measurement compares: perCluster of them, each with annotations extra
// annotations, in every logical cluster.
type clusterRoleSeed struct {
	perCluster, annotations int
	// syncTimeout bounds the wait for the seeded objects to be listed.
	syncTimeout time.Duration
	// logf receives the hammer's phase messages; nil discards.
	logf func(format string, args ...any)
}

// into seeds s's kcp with the hammer and returns how many objects it used.
// A hammer run needs a worker: one write, the same on every kcp, and no
// probe, which would pollute a stock kcp's cache before it is measured.
func (c clusterRoleSeed) into(ctx context.Context, s *kcpSlot, clusters []string) (int, error) {
	seed := hammer.DefaultOptions()
	seed.Resources = []hammer.Resource{hammer.ClusterRoles}
	seed.Objects = c.perCluster
	seed.Annotations = c.annotations
	seed.Listers, seed.Watchers, seed.Writers = 0, 0, 1
	seed.MaxRequests = 1
	seed.Duration = time.Second
	seed.NoAfterChecks = true
	seed.SyncTimeout = c.syncTimeout
	seed.Logf = c.logf
	seed.Clusters = clusters
	seed.Config = s.srv.Config()
	seed.ServerExited = s.srv.Done()
	rep, err := hammer.Run(ctx, seed)
	if err != nil {
		return 0, fmt.Errorf("seeding the %s kcp: %w", s.variant, err)
	}
	if rep.Error != "" || rep.Death.Died {
		return 0, fmt.Errorf("seeding the %s kcp: %s %s", s.variant, rep.Verdict, rep.Error)
	}
	return rep.Seed.Objects, nil
}
