package cachemutation

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// fakeCache is an in-memory storage.Interface that hands out objects the way
// k8s.io/apiserver's cacher does: Get with a resourceVersion and GetList copy
// the cached struct into the caller's object (sharing its maps, slices and
// pointers); Get without a resourceVersion is served "from etcd" (a deep
// copy); watch events carry the cached pointer itself (Emit) or a deep copy
// (EmitCopy). Objects in the cache are replaced, never changed in place.
type fakeCache struct {
	storage.Interface // nil: the methods not implemented here panic

	mu      sync.Mutex
	objects map[string]runtime.Object
	rv      int
	// listFromStorage serves every GetList with deep copies (a delegated
	// list).
	listFromStorage bool
	// afterFirstList, if set, runs once after the first GetList was served
	// (before the detector's re-read).
	afterFirstList func()

	watchers []chan watch.Event
}

func newFakeCache() *fakeCache {
	return &fakeCache{objects: map[string]runtime.Object{}}
}

// put stores a deep copy of obj under key with the next resourceVersion and
// returns the cached object.
func (f *fakeCache) put(key string, obj runtime.Object) runtime.Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
	o := obj.DeepCopyObject()
	m, _ := meta.Accessor(o)
	m.SetResourceVersion(fmt.Sprint(f.rv))
	if m.GetUID() == "" {
		m.SetUID(types.UID("uid-" + strings.ReplaceAll(key, "/", "-")))
	}
	f.objects[key] = o
	return o
}

func (f *fakeCache) cached(key string) runtime.Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.objects[key]
}

func (f *fakeCache) Versioner() storage.Versioner { return storage.APIObjectVersioner{} }

func (f *fakeCache) Get(_ context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	f.mu.Lock()
	o, ok := f.objects[key]
	f.mu.Unlock()
	if !ok {
		if opts.IgnoreNotFound {
			return runtime.SetZeroValue(objPtr)
		}
		return storage.NewKeyNotFoundError(key, 0)
	}
	if opts.ResourceVersion == "" {
		o = o.DeepCopyObject() // "etcd": a fresh decode
	}
	reflect.ValueOf(objPtr).Elem().Set(reflect.ValueOf(o).Elem())
	return nil
}

func (f *fakeCache) GetList(_ context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	f.mu.Lock()
	keys := make([]string, 0, len(f.objects))
	for k := range f.objects {
		if strings.HasPrefix(k, key) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	objs := make([]runtime.Object, 0, len(keys))
	for _, k := range keys {
		o := f.objects[k]
		if opts.Predicate.Label != nil {
			m, _ := meta.Accessor(o)
			if !opts.Predicate.Label.Matches(labels.Set(m.GetLabels())) {
				continue
			}
		}
		if f.listFromStorage {
			o = o.DeepCopyObject()
		}
		objs = append(objs, o)
	}
	after := f.afterFirstList
	f.afterFirstList = nil
	f.mu.Unlock()

	itemsPtr, err := meta.GetItemsPtr(listObj)
	if err != nil {
		return err
	}
	items := reflect.ValueOf(itemsPtr).Elem()
	items.Set(reflect.MakeSlice(items.Type(), len(objs), len(objs)))
	for i, o := range objs {
		items.Index(i).Set(reflect.ValueOf(o).Elem())
	}
	if after != nil {
		after()
	}
	return nil
}

func (f *fakeCache) Watch(ctx context.Context, _ string, _ storage.ListOptions) (watch.Interface, error) {
	ch := make(chan watch.Event, 16)
	f.mu.Lock()
	f.watchers = append(f.watchers, ch)
	f.mu.Unlock()
	return watch.NewProxyWatcher(ch), nil
}

// Emit sends the cached object itself to every watcher.
func (f *fakeCache) Emit(t watch.EventType, key string) {
	f.emit(watch.Event{Type: t, Object: f.cached(key)})
}

// EmitCopy sends a deep copy of the cached object.
func (f *fakeCache) EmitCopy(t watch.EventType, key string) {
	f.emit(watch.Event{Type: t, Object: f.cached(key).DeepCopyObject()})
}

func (f *fakeCache) emit(ev watch.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.watchers {
		ch <- ev
	}
}

// sharedWatchObject is Options.SharedWatchObject for the fake: an event
// object is shared iff it is a cached object.
func (f *fakeCache) sharedWatchObject(obj runtime.Object) (runtime.Object, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range f.objects {
		if o == obj {
			return o, true
		}
	}
	return nil, false
}
