package cachemutation

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes/scheme"
)

// The tests in this file run the fork's real watch cache
// (genericregistry.StorageWithCacher: etcd3 storage, Cacher, CacheDelegator)
// over an in-process etcd on 127.0.0.1, for ConfigMaps keyed the kcp way
// (/configmaps/<cluster>/<namespace>/<name>), and check what the detector
// makes of what the cacher really hands out.

const testCluster = "root"

// realCache is the fork's cacher storage for ConfigMaps, undecorated and
// decorated by a detector.
type realCache struct {
	raw     storage.Interface // StorageWithCacher's storage
	s       storage.Interface // raw wrapped by d
	d       *Detector
	found   *collector
	destroy func()
}

// startEtcd runs an in-process etcd bound to 127.0.0.1 for tb and returns
// its client endpoints.
func startEtcd(tb testing.TB) []string {
	tb.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = tb.TempDir()
	cfg.UnsafeNoFsync = true
	// Silent: at Close etcd logs its listeners' shutdown as errors, which
	// would also land between benchmark results.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	client, peer := loopbackURL(tb), loopbackURL(tb)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		tb.Fatalf("starting etcd: %v", err)
	}
	tb.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		tb.Fatal("etcd not ready after 60s")
	}
	return []string{client.String()}
}

// loopbackURL is http://127.0.0.1:<a free port>. etcd opens the listener
// itself, so another process could take the port first; etcd then fails to
// start and the test says so.
func loopbackURL(tb testing.TB) url.URL {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}

// startRealCache builds StorageWithCacher's storage for ConfigMaps and, if
// opts is not nil, a detector around it.
func startRealCache(tb testing.TB, opts *Options) *realCache {
	tb.Helper()
	return startRealCacheDecorated(tb, opts, true)
}

// startRealCacheDecorated is startRealCache; with decorate false the
// storage does not even go through (*Detector).Decorator.
func startRealCacheDecorated(tb testing.TB, opts *Options, decorate bool) *realCache {
	tb.Helper()
	endpoints := startEtcd(tb)
	// Versioned objects in the cache (client-go's scheme has no internal
	// types); the test shard's registries store internal ones.
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		tb.Fatal("no JSON serializer")
	}
	codec := scheme.Codecs.CodecForVersions(info.Serializer, info.Serializer, corev1.SchemeGroupVersion, corev1.SchemeGroupVersion)
	c := storagebackend.NewDefaultConfig("/registry", codec)
	c.Transport.ServerList = endpoints
	config := &storagebackend.ConfigForResource{Config: *c, GroupResource: configMaps}

	rc := &realCache{found: &collector{}}
	decorator := genericregistry.StorageWithCacher()
	if opts != nil {
		o := *opts
		o.OnFinding = rc.found.add
		o.Cluster = kcpCluster
		rc.d = New(o)
		tb.Cleanup(rc.d.Stop)
	}
	var destroy func()
	build := func(dec generic.StorageDecorator) storage.Interface {
		s, d, err := dec(config, "/configmaps", configMapKey,
			func() runtime.Object { return &corev1.ConfigMap{} },
			func() runtime.Object { return &corev1.ConfigMapList{} },
			storage.DefaultNamespaceScopedAttr, nil, nil)
		if err != nil {
			tb.Fatal(err)
		}
		destroy = d
		return s
	}
	if decorate {
		rc.s = build(rc.d.Decorator(decorator))
	} else {
		rc.s = build(decorator)
	}
	if w, ok := rc.s.(*wrapped); ok {
		rc.raw = w.Interface
	} else {
		rc.raw = rc.s
	}
	tb.Cleanup(destroy)
	// Until the cacher is ready the delegator serves reads from etcd.
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return rc.raw.ReadinessCheck() == nil, nil
	}); err != nil {
		tb.Fatalf("the watch cache is not ready after 30s: %v", rc.raw.ReadinessCheck())
	}
	return rc
}

// configMapKey is the watch cache's key function: the kcp layout, cluster
// from the context (the cacher passes a context with the object's cluster).
func configMapKey(ctx context.Context, obj runtime.Object) (string, error) {
	m, err := metaAccessor(obj)
	if err != nil {
		return "", err
	}
	cluster, err := genericapirequest.ClusterNameFrom(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("/configmaps/%s/%s/%s", cluster, m.GetNamespace(), m.GetName()), nil
}

func clusterCtx(ctx context.Context) context.Context {
	return genericapirequest.WithCluster(ctx, genericapirequest.Cluster{Name: testCluster})
}

func wildcardCtx(ctx context.Context) context.Context {
	return genericapirequest.WithCluster(ctx, genericapirequest.Cluster{Wildcard: true})
}

// create stores a ConfigMap and waits until the cache has it (a Get at its
// resourceVersion is served by the ready cacher, which waits until fresh).
func (rc *realCache) create(tb testing.TB, name string) *corev1.ConfigMap {
	tb.Helper()
	ctx := clusterCtx(context.Background())
	key := "/configmaps/" + testCluster + "/ns/" + name
	out := &corev1.ConfigMap{}
	if err := rc.raw.Create(ctx, key, configMap("ns", name), out, 0); err != nil {
		tb.Fatal(err)
	}
	got := &corev1.ConfigMap{}
	if err := rc.raw.Get(ctx, key, storage.GetOptions{ResourceVersion: out.ResourceVersion}, got); err != nil {
		tb.Fatalf("waiting for the cache: %v", err)
	}
	return out
}

// cached reads key from the cache (resourceVersion "0"), for assertions.
func (rc *realCache) cached(tb testing.TB, name string) *corev1.ConfigMap {
	tb.Helper()
	got := &corev1.ConfigMap{}
	if err := rc.raw.Get(clusterCtx(context.Background()), "/configmaps/"+testCluster+"/ns/"+name, storage.GetOptions{ResourceVersion: "0"}, got); err != nil {
		tb.Fatal(err)
	}
	return got
}

// TestRealCacherGet: the cacher's Get copies the cached struct (shared
// maps); the delegator serves a Get without resourceVersion from etcd
// (private). The detector tells them apart and reports only the first.
func TestRealCacherGet(t *testing.T) {
	rc := startRealCache(t, &Options{Interval: -1})
	rc.create(t, "cm")
	key := "/configmaps/" + testCluster + "/ns/cm"

	// From etcd: a write is harmless and not reported.
	privateBefore := handouts(configMaps, "get", SharingPrivate)
	ctx, done := requestCtx(t, "get", "/api/v1/namespaces/ns/configmaps/cm")
	fromEtcd := &corev1.ConfigMap{}
	if err := rc.s.Get(clusterCtx(ctx), key, storage.GetOptions{}, fromEtcd); err != nil {
		t.Fatal(err)
	}
	if n := handouts(configMaps, "get", SharingPrivate) - privateBefore; n != 1 {
		t.Errorf("a Get without resourceVersion: private hand-outs grew by %v, want 1", n)
	}
	fromEtcd.Annotations["etcd"] = "private"
	done()
	if _, leaked := rc.cached(t, "cm").Annotations["etcd"]; leaked {
		t.Fatal("a write to the etcd answer reached the cache: the test's premise is wrong")
	}

	// From the cache: a write to its own struct is harmless, a write to a map is not.
	sharedBefore := handouts(configMaps, "get", SharingShared)
	ctx, done = requestCtx(t, "get", "/api/v1/namespaces/ns/configmaps/cm")
	fromCache := &corev1.ConfigMap{}
	if err := rc.s.Get(clusterCtx(ctx), key, storage.GetOptions{ResourceVersion: "0"}, fromCache); err != nil {
		t.Fatal(err)
	}
	if n := handouts(configMaps, "get", SharingShared) - sharedBefore; n != 1 {
		t.Errorf("a Get with resourceVersion 0: shared hand-outs grew by %v, want 1", n)
	}
	fromCache.Name, fromCache.ResourceVersion = "renamed", "1"
	fromCache.Annotations["kcp.io/original-api-version"] = ""
	done()
	rc.d.Stop()

	if _, leaked := rc.cached(t, "cm").Annotations["kcp.io/original-api-version"]; !leaked {
		t.Fatal("the write to the cacher's Get answer did not reach the cache: the test's premise is wrong")
	}
	fs := rc.found.all()
	if len(fs) != 1 {
		t.Fatalf("%d findings, want 1: %v", len(fs), fs)
	}
	if diff := cmp.Diff([]string{`metadata.annotations["kcp.io/original-api-version"]`}, fs[0].Paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if fs[0].Name != "cm" || fs[0].Cluster != testCluster || fs[0].Sharing != SharingShared || fs[0].HandOut != "get" {
		t.Errorf("finding %+v", fs[0])
	}
}

// TestRealCacherList: list items are struct copies of the cached objects.
func TestRealCacherList(t *testing.T) {
	rc := startRealCache(t, &Options{Interval: -1})
	for _, n := range []string{"a", "b", "c"} {
		rc.create(t, n)
	}
	for _, rv := range []string{"", "0"} {
		ctx, done := requestCtx(t, "list", "/clusters/*/api/v1/configmaps")
		list := &corev1.ConfigMapList{}
		if err := rc.s.GetList(wildcardCtx(ctx), "/configmaps", storage.ListOptions{ResourceVersion: rv, Recursive: true, Predicate: storage.Everything}, list); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 3 || rc.d.Tracked() != 3 {
			t.Fatalf("rv %q: %d items, %d tracked; want 3, 3", rv, len(list.Items), rc.d.Tracked())
		}
		// Harmless: the items are the request's own structs.
		for i := range list.Items {
			list.Items[i].Name = "x"
			list.Items[i].Labels = map[string]string{"replaced": "map"}
		}
		done()
		waitFor(t, func() bool { return rc.d.Tracked() == 0 }, "completion")
	}
	if fs := rc.found.all(); len(fs) != 0 {
		t.Fatalf("harmless writes reported: %v", fs)
	}

	ctx, done := requestCtx(t, "list", "/clusters/*/api/v1/configmaps")
	list := &corev1.ConfigMapList{}
	if err := rc.s.GetList(wildcardCtx(ctx), "/configmaps", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list); err != nil {
		t.Fatal(err)
	}
	list.Items[1].Data["k"] = "written"
	done()
	rc.d.Stop()
	if got := rc.cached(t, "b").Data["k"]; got != "written" {
		t.Fatalf("the write did not reach the cache (data.k = %q): the test's premise is wrong", got)
	}
	fs := rc.found.all()
	if len(fs) != 1 || fs[0].Name != "b" || !cmp.Equal(fs[0].Paths, []string{`data["k"]`}) || fs[0].Sharing != SharingShared {
		t.Fatalf("findings %v, want one for b at data[\"k\"]", fs)
	}
}

// TestRealCacherWatch: live events are cachingObjects around the cached
// object: writes through their maps reach the cache and are reported,
// writes through their setters copy on write and are not; initial events
// are deep copies.
func TestRealCacherWatch(t *testing.T) {
	rc := startRealCache(t, &Options{Interval: -1})
	created := rc.create(t, "cm")

	watchFrom := func(rv string) watch.Interface {
		ctx, _ := requestCtx(t, "watch", "/clusters/*/api/v1/configmaps")
		w, err := rc.s.Watch(wildcardCtx(ctx), "/configmaps", storage.ListOptions{ResourceVersion: rv, Recursive: true, Predicate: storage.Everything})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		return w
	}
	next := func(w watch.Interface) watch.Event {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			return ev
		case <-time.After(30 * time.Second):
			t.Fatal("no watch event in 30s")
		}
		return watch.Event{}
	}

	// Initial events (resourceVersion 0) are deep copies: private.
	privateBefore := handouts(configMaps, "watch", SharingPrivate)
	initial := watchFrom("0")
	ev := next(initial)
	if ev.Type != watch.Added {
		t.Fatalf("first event %s", ev.Type)
	}
	ev.Object.(metav1.Object).GetAnnotations()["initial"] = "event"
	if n := handouts(configMaps, "watch", SharingPrivate) - privateBefore; n != 1 {
		t.Errorf("initial event: private hand-outs grew by %v, want 1", n)
	}

	initial.Stop()

	// Live events: one watcher, two updates.
	live := watchFrom(created.ResourceVersion)
	sharedBefore := handouts(configMaps, "watch", SharingShared)
	update := func(v string) *corev1.ConfigMap {
		updated := &corev1.ConfigMap{}
		err := rc.raw.GuaranteedUpdate(clusterCtx(context.Background()), "/configmaps/"+testCluster+"/ns/cm", updated, false, nil,
			func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
				cm := in.(*corev1.ConfigMap).DeepCopy()
				cm.Data["k"] = v
				return cm, nil, nil
			}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return updated
	}
	v2 := update("v2")
	ev = next(live)
	if _, isCaching := ev.Object.(runtime.CacheableObject); !isCaching {
		t.Fatalf("live event object is %T, not the cacher's cachingObject: the test's premise is wrong", ev.Object)
	}
	// Through the map GetAnnotations returns: the cached object's own.
	ev.Object.(metav1.Object).GetAnnotations()["kcp.io/original-api-version"] = ""
	if _, leaked := rc.cached(t, "cm").Annotations["kcp.io/original-api-version"]; !leaked {
		t.Fatal("the write through the cachingObject's annotations did not reach the cache: the test's premise is wrong")
	}

	update("v3")
	ev = next(live)
	// Through a setter: the cachingObject copies on write.
	ev.Object.(metav1.Object).SetLabels(map[string]string{"set": "through the setter"})
	ev.Object.(metav1.Object).GetLabels()["more"] = "after the copy"

	if n := handouts(configMaps, "watch", SharingShared) - sharedBefore; n != 2 {
		t.Errorf("live events: shared hand-outs grew by %v, want 2", n)
	}
	live.Stop()
	waitFor(t, func() bool { return rc.d.Tracked() == 0 }, "the watches to end")
	rc.d.Stop()

	cached := rc.cached(t, "cm")
	if _, leaked := cached.Labels["set"]; leaked {
		t.Fatal("the setter's write reached the cache: the test's premise is wrong")
	}
	fs := rc.found.all()
	if len(fs) != 1 {
		t.Fatalf("%d findings, want 1: %v", len(fs), fs)
	}
	if !cmp.Equal(fs[0].Paths, []string{`metadata.annotations["kcp.io/original-api-version"]`}) || fs[0].HandOut != "watch" || fs[0].ResourceVersion != v2.ResourceVersion {
		t.Fatalf("finding %+v", fs[0])
	}
}

func metaAccessor(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}
