// Package scrub finds the `kcp.io/original-api-version: ""` that a kcp built
// on the pristine fork persisted into etcd (a wildcard partial-metadata LIST
// wrote "" into the watch cache's typed object, the next merge PATCH stored
// it) and removes exactly that key, across every logical cluster.
//
// It lists full objects of the built-in, non-CRD resources from etcd, paged
// and rate-limited, and selects those whose annotation is "" exactly: the only
// value the pristine fork writes. Any other value is someone's own and is left
// alone. Removal is a JSON patch that tests the value before it removes it, so
// a concurrent write of another value is never undone.
package scrub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/kcp-carry/kcp-carry/pkg/carry/versionstamp"
)

// Annotation is the key the pristine fork writes.
const Annotation = "kcp.io/original-api-version"

// removePatch tests that the annotation is still "" and removes it, in one
// JSON patch: if anyone wrote another value in between, the test fails and
// nothing changes.
var removePatch = []byte(`[{"op":"test","path":"/metadata/annotations/kcp.io~1original-api-version","value":""},` +
	`{"op":"remove","path":"/metadata/annotations/kcp.io~1original-api-version"}]`)

// Options say what to scrub and how hard to push the server.
type Options struct {
	// Config reaches the server (a kubeconfig context). A /clusters/<name>
	// suffix of its host is dropped; requests go to /clusters/*/... or to
	// /clusters/<workspace>/.... Required.
	Config *rest.Config
	// Workspaces, when set, are scanned one by one (logical cluster names or
	// paths such as root:org, e.g. through the front-proxy) instead of
	// listing through /clusters/*.
	Workspaces []string
	// DiscoveryCluster is where the resources are discovered in wildcard
	// mode (built-in resources are the same in every logical cluster);
	// default "root". In workspace mode the first workspace.
	DiscoveryCluster string
	// Resources restricts the scan to these resources ("configmaps",
	// "clusterroles.rbac.authorization.k8s.io"); empty means every
	// built-in resource that supports list and patch.
	Resources []string
	// PageSize is the limit of each LIST page.
	PageSize int64
	// QPS and Burst bound the requests per second, all of them together.
	QPS   float32
	Burst int
	// Apply removes the key; otherwise nothing is written (dry run).
	Apply bool
	// Force applies to a server that is not a carry build.
	Force bool
	// MaxAttempts bounds the patches per object (a conflict, or a test that
	// failed while the object still carries "", is retried after a re-read).
	MaxAttempts int
	// Progress receives a line per resource and one every ProgressEvery.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// DefaultOptions are the CLI's defaults.
func DefaultOptions() Options {
	return Options{DiscoveryCluster: "root", PageSize: 500, QPS: 20, Burst: 40, MaxAttempts: 5, ProgressEvery: 5 * time.Second}
}

// ErrWildcardForbidden is returned (wrapped) when the credentials may not
// LIST through /clusters/*.
var ErrWildcardForbidden = errors.New("no wildcard access")

func (o *Options) validate() error {
	var errs []error
	if o.Config == nil || o.Config.Host == "" {
		errs = append(errs, errors.New("no server: give --kubeconfig and --context"))
	}
	if o.PageSize <= 0 {
		errs = append(errs, fmt.Errorf("--page-size must be positive, got %d", o.PageSize))
	}
	if o.QPS <= 0 || o.Burst <= 0 {
		errs = append(errs, fmt.Errorf("--qps and --burst must be positive, got %g and %d", o.QPS, o.Burst))
	}
	if o.MaxAttempts <= 0 {
		errs = append(errs, fmt.Errorf("--max-attempts must be positive, got %d", o.MaxAttempts))
	}
	for _, w := range o.Workspaces {
		if w == "" || w == "*" || strings.ContainsAny(w, "/?#") {
			errs = append(errs, fmt.Errorf("--workspaces: %q is not a workspace path or logical cluster name", w))
		}
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 5 * time.Second
	}
	if o.DiscoveryCluster == "" {
		o.DiscoveryCluster = "root"
	}
	return errors.Join(errs...)
}

// scrubber is one run.
type scrubber struct {
	opts    *Options
	base    *rest.Config // host without /clusters/...
	http    *http.Client
	dynamic *kcpdynamic.ClusterClientset
	rep     *Report
	seen    map[types.UID]struct{} // UIDs of the objects scanned so far

	scanned, polluted, scrubbed atomic.Int64
	current                     atomic.Value // the resource being scanned, for the progress line
}

// Run scans (and with Apply scrubs) and reports. The error is for a run
// that could not start or look (bad options, an unreachable server, no
// wildcard access, discovery failed); what happened to each object is in
// the report, and Report.ExitCode tells the outcome.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	s := &scrubber{opts: &opts, seen: map[types.UID]struct{}{}}
	var err error
	if s.base, err = baseConfig(opts.Config); err != nil {
		return nil, err
	}
	// One token bucket for every request of the run: --qps is the run's rate.
	s.base.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(opts.QPS, opts.Burst)
	if s.http, err = rest.HTTPClientFor(s.base); err != nil {
		return nil, fmt.Errorf("client for %s: %w", s.base.Host, err)
	}
	if s.dynamic, err = kcpdynamic.NewForConfigAndClient(s.base, s.http); err != nil {
		return nil, fmt.Errorf("client for %s: %w", s.base.Host, err)
	}
	s.rep = &Report{Server: s.base.Host, Apply: opts.Apply, Force: opts.Force, Scope: "/clusters/*", Started: time.Now()}
	if len(opts.Workspaces) > 0 {
		s.rep.Scope = "workspaces " + strings.Join(opts.Workspaces, ",")
	}

	if err := s.readVersion(ctx); err != nil {
		return nil, err
	}
	if opts.Apply && !s.rep.CarryBuild && !opts.Force {
		s.rep.Refused = fmt.Sprintf("%s is not a carry build (gitVersion %q has no +kcp-...-carry-... stamp): "+
			"it still writes %s=\"\" into its watch cache on every wildcard partial-metadata LIST, and the next "+
			"PATCH of an object stores it again, so a scrub would not last. Upgrade the shard to a carry build "+
			"first, or pass --force", s.base.Host, s.rep.GitVersion, Annotation)
		s.rep.finish()
		return s.rep, nil
	}

	resources, err := s.discover(ctx)
	if err != nil {
		return nil, err
	}
	stop := s.progressTicker()
	defer stop()
	for _, r := range resources {
		rr := s.scanResource(ctx, r)
		if errors.Is(rr.err, ErrWildcardForbidden) {
			return nil, rr.err
		}
		s.rep.Resources = append(s.rep.Resources, rr)
		if ctx.Err() != nil {
			break
		}
	}
	stop()
	s.rep.finish()
	return s.rep, nil
}

// baseConfig is cfg for the server's base URL: a /clusters/<name> suffix
// (kcp's per-workspace contexts) is dropped.
func baseConfig(cfg *rest.Config) (*rest.Config, error) {
	c := rest.CopyConfig(cfg)
	u, err := url.Parse(c.Host)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("server %q in the kubeconfig context is not a URL", c.Host)
	}
	if i := strings.Index(u.Path, "/clusters/"); i >= 0 {
		u.Path = u.Path[:i]
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	c.Host = u.String()
	c.APIPath = ""
	if c.UserAgent == "" {
		c.UserAgent = "kcp-carry-scrub"
	}
	return c, nil
}

// clusterConfig is the base config for /clusters/<name>.
func (s *scrubber) clusterConfig(name string) *rest.Config {
	c := rest.CopyConfig(s.base)
	c.Host += "/clusters/" + name
	return c
}

// readVersion reads /version and whether it carries the carry's stamp.
func (s *scrubber) readVersion(ctx context.Context) error {
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(s.base, s.http)
	if err != nil {
		return err
	}
	body, err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("server %s: GET /version: 401, the credentials were not accepted (the token, client certificate or kubeconfig user): %w", s.base.Host, err)
	case err != nil:
		return fmt.Errorf("server %s unreachable: GET /version: %w", s.base.Host, err)
	}
	v, err := decodeVersion(body)
	if err != nil {
		return fmt.Errorf("server %s: GET /version: %w", s.base.Host, err)
	}
	s.rep.GitVersion = v
	s.rep.CarryID, _, s.rep.CarryBuild = versionstamp.ReadCarry(v)
	return nil
}

// scope is the logical clusters a scan lists: "*" or the workspaces.
func (s *scrubber) scope() []string {
	if len(s.opts.Workspaces) > 0 {
		return s.opts.Workspaces
	}
	return []string{"*"}
}

// eachObject lists every object of r in every cluster of the scope from
// etcd (resourceVersion ""), page by page, and calls fn with the cluster it
// listed.
func (s *scrubber) eachObject(ctx context.Context, r Resource, fn func(listed string, obj *unstructured.Unstructured) error) error {
	for _, cluster := range s.scope() {
		ri := s.dynamic.Cluster(logicalcluster.NewPath(cluster)).Resource(r.GVR())
		p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
			return ri.List(ctx, opts)
		}))
		p.PageSize = s.opts.PageSize
		err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return fmt.Errorf("list item of %s is a %T", r, obj)
			}
			return fn(cluster, u)
		})
		if err != nil {
			path := "/clusters/" + cluster + "/" + r.collectionPath()
			if apierrors.IsForbidden(err) && cluster == "*" {
				return fmt.Errorf("LIST %s: %w: the context's user may not list through /clusters/* (use a shard admin context such as kcp's shard-base, or --workspaces): %v", path, ErrWildcardForbidden, err)
			}
			return fmt.Errorf("LIST %s: %w", path, err)
		}
	}
	return nil
}

// scanResource lists r, selects the polluted objects and, with Apply,
// scrubs them.
func (s *scrubber) scanResource(ctx context.Context, r Resource) *ResourceReport {
	rr := &ResourceReport{Resource: r}
	s.current.Store(r.String())
	var polluted []*ObjectReport
	rr.err = s.eachObject(ctx, r, func(listed string, u *unstructured.Unstructured) error {
		if _, dup := s.seen[u.GetUID()]; dup && u.GetUID() != "" {
			// The same stored object served by two resources (core and
			// events.k8s.io events): counted where it was seen first.
			rr.Aliased++
			return nil
		}
		s.seen[u.GetUID()] = struct{}{}
		rr.Scanned++
		s.scanned.Add(1)
		v, ok := u.GetAnnotations()[Annotation]
		if !ok {
			return nil
		}
		obj := newObjectReport(r, listed, u, len(s.opts.Workspaces) > 0)
		if v != "" {
			obj.Value, obj.Outcome = v, OutcomeOtherValue
			rr.OtherValue++
			rr.Objects = append(rr.Objects, obj)
			return nil
		}
		rr.Polluted++
		s.polluted.Add(1)
		obj.Outcome, obj.Polluted = OutcomePolluted, true
		rr.Objects = append(rr.Objects, obj)
		polluted = append(polluted, obj)
		return nil
	})
	if rr.err != nil {
		rr.Error = rr.err.Error()
		s.progressf("%s: %v", r, rr.err)
	}
	if s.opts.Apply && !errors.Is(rr.err, ErrWildcardForbidden) {
		for _, obj := range polluted {
			if ctx.Err() != nil {
				obj.Outcome, obj.Reason = OutcomeFailed, ctx.Err().Error()
			} else {
				s.scrubObject(ctx, r, obj)
			}
			rr.count(obj)
		}
	}
	s.progressf("%s: %s", r, rr.summary(s.opts.Apply))
	return rr
}

// scrubObject patches obj's own cluster until the key is gone, someone
// else's value is there, or MaxAttempts patches were sent.
func (s *scrubber) scrubObject(ctx context.Context, r Resource, obj *ObjectReport) {
	ri := s.dynamic.Cluster(logicalcluster.NewPath(obj.patchCluster)).Resource(r.GVR())
	ni := ri.Namespace(obj.Namespace)
	for attempt := 1; ; attempt++ {
		obj.Attempts = attempt
		_, err := ni.Patch(ctx, obj.Name, types.JSONPatchType, removePatch, metav1.PatchOptions{FieldManager: "kcp-carry-scrub"})
		switch {
		case err == nil:
			obj.Outcome = OutcomeScrubbed
			s.scrubbed.Add(1)
			return
		case apierrors.IsNotFound(err):
			obj.Outcome, obj.Reason = OutcomeGone, "deleted before it was patched"
			return
		case apierrors.IsConflict(err), isTestFailed(err):
			// The object changed under us: look at what it holds now.
		case apierrors.IsMethodNotSupported(err), apierrors.IsForbidden(err):
			obj.Outcome, obj.Reason = OutcomeFailed, fmt.Sprintf("%s %s cannot be patched: %v", r, obj.Ref(), err)
			return
		default:
			obj.Outcome, obj.Reason = OutcomeFailed, fmt.Sprintf("PATCH %s: %v", obj.Ref(), err)
			return
		}
		cur, gerr := ni.Get(ctx, obj.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(gerr):
			obj.Outcome, obj.Reason = OutcomeGone, "deleted while being patched"
			return
		case gerr != nil:
			obj.Outcome, obj.Reason = OutcomeFailed, fmt.Sprintf("PATCH %s: %v; re-read: %v", obj.Ref(), err, gerr)
			return
		}
		v, ok := cur.GetAnnotations()[Annotation]
		switch {
		case !ok:
			obj.Outcome, obj.Reason = OutcomeAlreadyClean, "the key was removed by someone else"
			return
		case v != "":
			obj.Value, obj.Outcome, obj.Reason = v, OutcomeOtherValue, "another value was written meanwhile; left alone"
			return
		case attempt >= s.opts.MaxAttempts:
			obj.Outcome, obj.Reason = OutcomeFailed, fmt.Sprintf("still %q after %d patches, last: %v", v, attempt, err)
			return
		}
	}
}

// isTestFailed tells a JSON patch whose test operation failed (422).
func isTestFailed(err error) bool {
	var se apierrors.APIStatus
	return errors.As(err, &se) && se.Status().Code == http.StatusUnprocessableEntity
}

func (s *scrubber) progressf(format string, args ...any) {
	if s.opts.Progress != nil {
		fmt.Fprintf(s.opts.Progress, "scrub: "+format+"\n", args...)
	}
}

// progressTicker prints the running totals every ProgressEvery until stopped.
func (s *scrubber) progressTicker() (stop func()) {
	if s.opts.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(s.opts.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.progressf("%s: %d scanned, %d polluted, %d scrubbed (at %v)", time.Since(s.rep.Started).Round(time.Second), s.scanned.Load(), s.polluted.Load(), s.scrubbed.Load(), s.current.Load())
			}
		}
	}()
	var stopped atomic.Bool
	return func() {
		if stopped.CompareAndSwap(false, true) {
			close(done)
			<-finished
		}
	}
}
