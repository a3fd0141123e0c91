package cachemutation

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// EnvVar enables the detector in servers that call EnabledFromEnv.
const EnvVar = "KCP_CARRY_CACHE_MUTATION_DETECTOR"

// EnabledFromEnv reports whether EnvVar asks for the detector ("true", "1",
// ...; unset or empty means off). A value strconv.ParseBool does not accept
// is an error that names the variable.
func EnabledFromEnv() (bool, error) {
	v := strings.TrimSpace(os.Getenv(EnvVar))
	if v == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q: want true or false", EnvVar, v)
	}
	return on, nil
}

// Defaults of Options.
const (
	DefaultInterval       = time.Second
	DefaultMaxAge         = 2 * time.Minute
	DefaultWatchRetention = 10 * time.Second
	DefaultMaxTracked     = 200000
)

// Options configure a Detector. The zero value is usable.
type Options struct {
	// Interval is the period of the comparison of every tracked object
	// (default DefaultInterval; negative: only on completion).
	Interval time.Duration
	// MaxAge is how long a Get or GetList hand-out whose context never ends
	// stays tracked (default DefaultMaxAge).
	MaxAge time.Duration
	// WatchRetention is how long each watch event's object stays tracked
	// (default DefaultWatchRetention); all of a watch's objects are compared
	// once more when the watch ends.
	WatchRetention time.Duration
	// MaxTracked caps the objects tracked at once (default
	// DefaultMaxTracked); hand-outs beyond it are counted as "untracked".
	MaxTracked int
	// Cluster returns an object's logical cluster for findings (kcp: the
	// kcp.io/cluster annotation). Nil: no cluster.
	Cluster func(metav1.Object) string
	// OnFinding, if set, is called once per finding, from the goroutine
	// that compared the object.
	OnFinding func(Finding)
	// SharedWatchObject returns the memory a watch event's object shares
	// with the cache, or false if it shares none. Nil: the rule of
	// k8s.io/apiserver's cacher (the object wrapped by a cachingObject that
	// was not copied on write; any other event object is private).
	SharedWatchObject func(runtime.Object) (runtime.Object, bool)
}

var logger = klog.Background().WithName("cache-mutation-detector")

// Detector fingerprints what wrapped storages hand out and reports
// read-path writes. A nil *Detector is valid and does nothing: its
// RESTOptionsGetter, Decorator, Wrap and WithRequest return their argument.
type Detector struct {
	opts Options

	mu       sync.Mutex
	batches  map[*batch]struct{}
	tracked  int
	findings []Finding
	reported map[string]bool
	stopped  bool

	stopCh   chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// New returns a running Detector and registers its metrics in the legacy
// registry. Stop it when done.
func New(opts Options) *Detector {
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if opts.WatchRetention <= 0 {
		opts.WatchRetention = DefaultWatchRetention
	}
	if opts.MaxTracked <= 0 {
		opts.MaxTracked = DefaultMaxTracked
	}
	if opts.SharedWatchObject == nil {
		opts.SharedWatchObject = unwrapCachingObject
	}
	registerMetrics()
	d := &Detector{
		opts:     opts,
		batches:  map[*batch]struct{}{},
		reported: map[string]bool{},
		stopCh:   make(chan struct{}),
	}
	if opts.Interval > 0 {
		d.wg.Add(1)
		go d.loop()
	}
	return d
}

// Stop compares every tracked object one last time, then stops the periodic
// comparison and forgets them. Findings are still returned by Findings.
func (d *Detector) Stop() {
	if d == nil {
		return
	}
	d.stopOnce.Do(func() {
		close(d.stopCh)
		d.wg.Wait()
		d.compareAll("completion", true)
		d.mu.Lock()
		d.stopped = true
		d.mu.Unlock()
	})
}

// Findings returns the findings so far.
func (d *Detector) Findings() []Finding {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Finding(nil), d.findings...)
}

// CompareNow compares every tracked object with its fingerprint now
// (trigger "periodic").
func (d *Detector) CompareNow() {
	if d == nil {
		return
	}
	d.compareAll("periodic", false)
}

// Tracked is the number of objects tracked now.
func (d *Detector) Tracked() int {
	if d == nil {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.tracked
}

func (d *Detector) loop() {
	defer d.wg.Done()
	t := time.NewTicker(d.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-d.stopCh:
			return
		case <-t.C:
			d.compareAll("periodic", false)
		}
	}
}

// compareAll compares every live batch and drops what is done: expired
// batches, old watch events. final drops everything.
func (d *Detector) compareAll(trigger string, final bool) {
	d.mu.Lock()
	batches := make([]*batch, 0, len(d.batches))
	for b := range d.batches {
		batches = append(batches, b)
	}
	d.mu.Unlock()
	now := time.Now()
	for _, b := range batches {
		b.mu.Lock()
		switch {
		case final:
			b.compareLocked(trigger)
			d.dropLocked(b)
		case !b.watch && now.Sub(b.start) > d.opts.MaxAge:
			b.compareLocked("expiry")
			d.dropLocked(b)
		case b.watch:
			b.compareLocked(trigger)
			b.expireLocked(now.Add(-d.opts.WatchRetention))
		default:
			b.compareLocked(trigger)
		}
		b.mu.Unlock()
	}
}

// dropLocked forgets b (b.mu held).
func (d *Detector) dropLocked(b *batch) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.batches[b]; ok {
		delete(d.batches, b)
		d.tracked -= len(b.records)
	}
	b.records = nil
	b.dropped = true
	b.releaseHoldLocked()
}

// batch is what one storage call (Get, GetList) or one watch handed out.
type batch struct {
	d         *Detector
	resource  schema.GroupResource
	operation string
	req       Request
	start     time.Time
	watch     bool

	mu      sync.Mutex
	records []*record
	dropped bool
	holding bool // counted in holding_requests
}

// record is one tracked object.
type record struct {
	view     runtime.Object // the memory shared with the cache
	snapshot runtime.Object // deep copy of view at hand-out
	sharing  string
	at       time.Time

	namespace, name, uid, resourceVersion, cluster string
}

func (d *Detector) newBatch(ctx context.Context, resource schema.GroupResource, operation string, watch bool) *batch {
	return &batch{
		d:         d,
		resource:  resource,
		operation: operation,
		req:       requestFrom(ctx, operation),
		start:     time.Now(),
		watch:     watch,
	}
}

// newRecord fingerprints view, or returns nil if it has no object metadata.
func (d *Detector) newRecord(view runtime.Object, sharing string) *record {
	m, err := meta.Accessor(view)
	if err != nil {
		return nil
	}
	r := &record{
		view:            view,
		snapshot:        view.DeepCopyObject(),
		sharing:         sharing,
		at:              time.Now(),
		namespace:       m.GetNamespace(),
		name:            m.GetName(),
		uid:             string(m.GetUID()),
		resourceVersion: m.GetResourceVersion(),
	}
	if d.opts.Cluster != nil {
		r.cluster = d.opts.Cluster(m)
	}
	return r
}

// reserve takes n slots of the tracking cap; false when it is full.
func (d *Detector) reserve(n int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped || d.tracked+n > d.opts.MaxTracked {
		return false
	}
	d.tracked += n
	return true
}

func (d *Detector) release(n int) {
	d.mu.Lock()
	d.tracked -= n
	d.mu.Unlock()
}

// register starts tracking b (its records already counted by reserve) and
// compares it when ctx ends; a watch batch is completed by its watcher.
func (d *Detector) register(ctx context.Context, b *batch) {
	d.mu.Lock()
	d.batches[b] = struct{}{}
	d.mu.Unlock()
	b.mu.Lock()
	b.holding = true
	b.mu.Unlock()
	holdingRequests.Inc()
	if !b.watch {
		context.AfterFunc(ctx, b.complete)
	}
}

// complete compares b now that its request is done, and drops it.
func (b *batch) complete() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped {
		return
	}
	b.compareLocked("completion")
	b.d.dropLocked(b)
}

// releaseHoldLocked takes b out of holding_requests once.
func (b *batch) releaseHoldLocked() {
	if b.holding {
		b.holding = false
		holdingRequests.Dec()
	}
}

// add appends r to a live watch batch.
func (b *batch) add(r *record) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped {
		return false
	}
	b.records = append(b.records, r)
	return true
}

// expireLocked drops watch records handed out before cutoff (compared just
// before by the caller).
func (b *batch) expireLocked(cutoff time.Time) {
	keep := b.records[:0]
	for _, r := range b.records {
		if r.at.After(cutoff) {
			keep = append(keep, r)
		}
	}
	n := len(b.records) - len(keep)
	for i := len(keep); i < len(b.records); i++ {
		b.records[i] = nil
	}
	b.records = keep
	if n > 0 {
		b.d.release(n)
	}
}

func (b *batch) compareLocked(trigger string) {
	if len(b.records) == 0 {
		return
	}
	comparisonsTotal.WithLabelValues(trigger).Add(float64(len(b.records)))
	for _, r := range b.records {
		if reflect.DeepEqual(r.snapshot, r.view) {
			continue
		}
		paths, diff := changes(r.snapshot, r.view)
		f := Finding{
			Resource:        b.resource.String(),
			Cluster:         r.cluster,
			Namespace:       r.namespace,
			Name:            r.name,
			UID:             r.uid,
			ResourceVersion: r.resourceVersion,
			Paths:           paths,
			Diff:            diff,
			Request:         b.req,
			HandOut:         b.operation,
			Sharing:         r.sharing,
			Trigger:         trigger,
			HandedOut:       r.at,
			DetectedAt:      time.Now(),
		}
		// Later writes to the same object are reported against the state
		// reported now.
		r.snapshot = r.view.DeepCopyObject()
		b.d.report(f)
	}
}

// report records, counts, logs and calls back f once per distinct change
// (several holders of one object see the same change).
func (d *Detector) report(f Finding) {
	key := f.Resource + "\x00" + f.Cluster + "\x00" + f.Namespace + "\x00" + f.Name + "\x00" + f.UID + "\x00" + f.ResourceVersion + "\x00" + f.Diff
	d.mu.Lock()
	if d.reported[key] {
		d.mu.Unlock()
		return
	}
	d.reported[key] = true
	d.findings = append(d.findings, f)
	stopped := d.stopped
	d.mu.Unlock()

	gr := schema.ParseGroupResource(f.Resource)
	findingsTotal.WithLabelValues(gr.Group, gr.Resource, f.Request.Verb).Inc()
	logger.Error(nil, "A read path wrote into an object shared with the watch cache",
		"resource", f.Resource, "cluster", f.Cluster, "namespace", f.Namespace, "name", f.Name,
		"resourceVersion", f.ResourceVersion, "paths", f.Paths,
		"verb", f.Request.Verb, "path", f.Request.Path, "query", f.Request.Query, "accept", f.Request.Accept,
		"handOut", f.HandOut, "sharing", f.Sharing, "trigger", f.Trigger, "diff", f.Diff)
	if d.opts.OnFinding != nil && !stopped {
		d.opts.OnFinding(f)
	}
}
