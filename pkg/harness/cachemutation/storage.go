package cachemutation

import (
	"context"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// Sharing classes of a hand-out (label values of handouts_total).
const (
	SharingShared    = "shared"
	SharingPrivate   = "private"
	SharingUnknown   = "unknown"
	sharingUntracked = "untracked"
)

// RESTOptionsGetter returns a getter whose RESTOptions decorate storage with
// the detector (see Decorator). With a nil Detector it returns inner.
func (d *Detector) RESTOptionsGetter(inner generic.RESTOptionsGetter) generic.RESTOptionsGetter {
	if d == nil || inner == nil {
		return inner
	}
	return &restOptionsGetter{inner: inner, d: d}
}

type restOptionsGetter struct {
	inner generic.RESTOptionsGetter
	d     *Detector
}

func (g *restOptionsGetter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	o, err := g.inner.GetRESTOptions(resource, example)
	if err != nil {
		return o, err
	}
	o.Decorator = g.d.Decorator(o.Decorator)
	return o, nil
}

// Decorator returns a storage decorator that wraps what inner returns (the
// cacher, for genericregistry.StorageWithCacher) with the detector. With a
// nil Detector it returns inner.
func (d *Detector) Decorator(inner generic.StorageDecorator) generic.StorageDecorator {
	if d == nil || inner == nil {
		return inner
	}
	return func(
		config *storagebackend.ConfigForResource,
		resourcePrefix string,
		keyFunc func(ctx context.Context, obj runtime.Object) (string, error),
		newFunc func() runtime.Object,
		newListFunc func() runtime.Object,
		getAttrsFunc storage.AttrFunc,
		trigger storage.IndexerFuncs,
		indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := inner(config, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrsFunc, trigger, indexers)
		if err != nil || s == nil {
			return s, destroy, err
		}
		var gr schema.GroupResource
		if config != nil {
			gr = config.GroupResource
		}
		return d.Wrap(s, gr), destroy, nil
	}
}

// Wrap returns s with every object it hands out tracked by d. resource names
// s in findings and metrics. With a nil Detector it returns s.
func (d *Detector) Wrap(s storage.Interface, resource schema.GroupResource) storage.Interface {
	if d == nil || s == nil {
		return s
	}
	return &wrapped{Interface: s, d: d, resource: resource}
}

// wrapped is a storage.Interface whose reads are tracked; writes and the
// rest pass through.
type wrapped struct {
	storage.Interface
	d        *Detector
	resource schema.GroupResource
}

// probeGet and probeList re-read through the wrapped storage from the
// cache: resourceVersion "0" is "any version", which the cacher serves from
// memory.
var probeGetOptions = storage.GetOptions{ResourceVersion: "0", IgnoreNotFound: true}

func (s *wrapped) count(op, sharing string, n int) {
	if n > 0 {
		handoutsTotal.WithLabelValues(s.resource.Group, s.resource.Resource, op, sharing).Add(float64(n))
	}
}

// Get implements storage.Interface.
func (s *wrapped) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	if err := s.Interface.Get(ctx, key, opts, objPtr); err != nil {
		return err
	}
	s.trackGet(ctx, key, objPtr)
	return nil
}

func (s *wrapped) trackGet(ctx context.Context, key string, objPtr runtime.Object) {
	m, err := meta.Accessor(objPtr)
	if err != nil || (m.GetName() == "" && m.GetUID() == "") {
		return // not found with IgnoreNotFound: a zero object
	}
	view, ok := shallowCopy(objPtr)
	if !ok {
		return
	}
	sharing := SharingUnknown
	if probe, ok := newLike(objPtr); ok {
		if err := s.Interface.Get(ctx, key, probeGetOptions, probe); err == nil {
			sharing = classify(objPtr, probe)
		}
	}
	if sharing == SharingPrivate {
		s.count("get", sharing, 1)
		return
	}
	if !s.d.reserve(1) {
		s.count("get", sharingUntracked, 1)
		return
	}
	b := s.d.newBatch(ctx, s.resource, "get", false)
	r := s.d.newRecord(view, sharing)
	if r == nil {
		s.d.release(1)
		return
	}
	b.records = []*record{r}
	s.count("get", sharing, 1)
	s.d.register(ctx, b)
}

// GetList implements storage.Interface.
func (s *wrapped) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if err := s.Interface.GetList(ctx, key, opts, listObj); err != nil {
		return err
	}
	s.trackList(ctx, key, opts, listObj)
	return nil
}

func (s *wrapped) trackList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) {
	itemsPtr, err := meta.GetItemsPtr(listObj)
	if err != nil {
		return
	}
	items := reflect.ValueOf(itemsPtr)
	if items.Kind() != reflect.Pointer || items.Elem().Kind() != reflect.Slice {
		return
	}
	items = items.Elem()
	n := items.Len()
	if n == 0 {
		return
	}

	// The cache's view of the same objects, by UID.
	var twins map[string]reflect.Value
	ident := s.identity
	if probe, ok := newLike(listObj); ok {
		popts := opts
		popts.ResourceVersion = "0"
		popts.ResourceVersionMatch = ""
		popts.Predicate.Limit = 0
		popts.Predicate.Continue = ""
		popts.SendInitialEvents = nil
		if err := s.Interface.GetList(ctx, key, popts, probe); err == nil {
			twins = indexByIdentity(probe, ident)
		}
	}

	var records []*record
	counts := map[string]int{}
	for i := 0; i < n; i++ {
		item := items.Index(i)
		var view runtime.Object
		var itemVal reflect.Value
		switch item.Kind() {
		case reflect.Struct:
			// The cacher copies the cached struct into the list: the item is
			// the request's own, its maps, slices and pointers are the cache's.
			v, ok := shallowCopyValue(item)
			if !ok {
				continue
			}
			view, itemVal = v, item
		case reflect.Pointer, reflect.Interface:
			// The list holds the storage's pointer: all of it may be shared.
			if item.IsNil() {
				continue
			}
			o, ok := item.Interface().(runtime.Object)
			if !ok {
				continue
			}
			view, itemVal = o, item
		default:
			continue
		}
		sharing := SharingUnknown
		if twins != nil {
			sharing = classifyValue(itemVal, twins, ident)
		}
		if sharing == SharingPrivate {
			counts[sharing]++
			continue
		}
		if r := s.d.newRecord(view, sharing); r != nil {
			records = append(records, r)
			counts[sharing]++
		}
	}
	s.count("list", SharingPrivate, counts[SharingPrivate])
	if len(records) == 0 {
		return
	}
	if !s.d.reserve(len(records)) {
		s.count("list", sharingUntracked, len(records))
		return
	}
	s.count("list", SharingShared, counts[SharingShared])
	s.count("list", SharingUnknown, counts[SharingUnknown])
	b := s.d.newBatch(ctx, s.resource, "list", false)
	b.records = records
	s.d.register(ctx, b)
}

// Watch implements storage.Interface.
func (s *wrapped) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	w, err := s.Interface.Watch(ctx, key, opts)
	if err != nil || w == nil {
		return w, err
	}
	b := s.d.newBatch(ctx, s.resource, "watch", true)
	s.d.register(ctx, b)
	tw := &trackedWatch{
		ctx:    ctx,
		inner:  w,
		s:      s,
		b:      b,
		result: make(chan watch.Event),
		stop:   make(chan struct{}),
	}
	go tw.run()
	return tw, nil
}

// trackedWatch forwards a watch's events, fingerprinting each event object
// that shares memory with the cache before the handler gets it.
type trackedWatch struct {
	ctx      context.Context
	inner    watch.Interface
	s        *wrapped
	b        *batch
	result   chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (w *trackedWatch) ResultChan() <-chan watch.Event { return w.result }

func (w *trackedWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}

func (w *trackedWatch) run() {
	defer w.b.complete()
	defer close(w.result)
	in := w.inner.ResultChan()
	for {
		var ev watch.Event
		var ok bool
		select {
		case ev, ok = <-in:
			if !ok {
				return
			}
		case <-w.stop:
			return
		}
		w.track(ev)
		select {
		case w.result <- ev:
		case <-w.stop:
			return
		case <-w.ctx.Done():
			// Nobody reads any more: the handler returned without Stop.
			w.Stop()
			return
		}
	}
}

func (w *trackedWatch) track(ev watch.Event) {
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
	default:
		return
	}
	if ev.Object == nil {
		return
	}
	view, shared := w.s.d.opts.SharedWatchObject(ev.Object)
	if !shared {
		w.s.count("watch", SharingPrivate, 1)
		return
	}
	r := w.s.d.newRecord(view, SharingShared)
	if r == nil {
		return
	}
	if !w.s.d.reserve(1) {
		w.s.count("watch", sharingUntracked, 1)
		return
	}
	if !w.b.add(r) {
		w.s.d.release(1)
		return
	}
	w.s.count("watch", SharingShared, 1)
}

// newLike returns a new empty object of obj's type.
func newLike(obj runtime.Object) (runtime.Object, bool) {
	t := reflect.TypeOf(obj)
	if t == nil || t.Kind() != reflect.Pointer {
		return nil, false
	}
	o, ok := reflect.New(t.Elem()).Interface().(runtime.Object)
	return o, ok
}

// identity names an object within a list: its UID, or (objects stored
// without one, as in tests that bypass the registry) cluster, namespace and
// name.
func (s *wrapped) identity(m metav1.Object) string {
	if uid := m.GetUID(); uid != "" {
		return string(uid)
	}
	cluster := ""
	if s.d.opts.Cluster != nil {
		cluster = s.d.opts.Cluster(m)
	}
	return cluster + "|" + m.GetNamespace() + "/" + m.GetName()
}

// classify compares what the storage handed out with the cache's answer for
// the same key.
func classify(got, twin runtime.Object) string {
	gm, err1 := meta.Accessor(got)
	tm, err2 := meta.Accessor(twin)
	if err1 != nil || err2 != nil || tm.GetName() == "" || gm.GetUID() != tm.GetUID() || gm.GetResourceVersion() != tm.GetResourceVersion() {
		return SharingUnknown
	}
	if sharesMemory(reflect.ValueOf(got), reflect.ValueOf(twin), 0) {
		return SharingShared
	}
	return SharingPrivate
}

// classifyValue is classify for a list item against the cache's items.
func classifyValue(item reflect.Value, twins map[string]reflect.Value, ident func(metav1.Object) string) string {
	m, ok := itemMeta(item)
	if !ok {
		return SharingUnknown
	}
	twin, ok := twins[ident(m)]
	if !ok {
		return SharingUnknown
	}
	if tm, _ := itemMeta(twin); tm == nil || tm.GetResourceVersion() != m.GetResourceVersion() {
		return SharingUnknown
	}
	if sharesMemory(item, twin, 0) {
		return SharingShared
	}
	return SharingPrivate
}

func indexByIdentity(list runtime.Object, ident func(metav1.Object) string) map[string]reflect.Value {
	itemsPtr, err := meta.GetItemsPtr(list)
	if err != nil {
		return nil
	}
	items := reflect.ValueOf(itemsPtr).Elem()
	out := make(map[string]reflect.Value, items.Len())
	for i := 0; i < items.Len(); i++ {
		if m, ok := itemMeta(items.Index(i)); ok {
			out[ident(m)] = items.Index(i)
		}
	}
	return out
}

// itemMeta is the object metadata of a list item (struct or pointer).
func itemMeta(item reflect.Value) (metav1.Object, bool) {
	var obj any
	switch item.Kind() {
	case reflect.Struct:
		if !item.CanAddr() {
			return nil, false
		}
		obj = item.Addr().Interface()
	case reflect.Pointer, reflect.Interface:
		if item.IsNil() {
			return nil, false
		}
		obj = item.Interface()
	default:
		return nil, false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false
	}
	return m, true
}
