package cachemutation

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kcp-carry/kcp-carry/pkg/harness/partialmeta"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/component-base/metrics/testutil"
)

var (
	clusterRoles = schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}
	configMaps   = schema.GroupResource{Resource: "configmaps"}
)

const clusterAnnotation = "kcp.io/cluster"

func kcpCluster(m metav1.Object) string { return m.GetAnnotations()[clusterAnnotation] }

func clusterRole(name string) *rbacv1.ClusterRole {
	controller := true
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{"app": "demo"},
			Annotations: map[string]string{clusterAnnotation: "root"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner-uid", Controller: &controller,
			}},
		},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"},
		}},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{
			MatchLabels: map[string]string{"aggregate": "yes"},
		}}},
	}
}

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   ns,
			Name:        name,
			Labels:      map[string]string{"app": "demo"},
			Annotations: map[string]string{clusterAnnotation: "root"},
		},
		Data: map[string]string{"k": "v"},
	}
}

// requestCtx is a request context with request info, as the apiserver's
// handler chain builds it, that the test ends with the returned func.
func requestCtx(t *testing.T, verb, path string) (context.Context, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{IsResourceRequest: true, Verb: verb, Path: path})
	t.Cleanup(cancel)
	return ctx, cancel
}

// collector gathers findings from OnFinding.
type collector struct {
	mu sync.Mutex
	fs []Finding
}

func (c *collector) add(f Finding) { c.mu.Lock(); c.fs = append(c.fs, f); c.mu.Unlock() }
func (c *collector) all() []Finding {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Finding(nil), c.fs...)
}

// newTestDetector returns a detector without periodic comparison (the
// test triggers it) and its findings.
func newTestDetector(t *testing.T, f *fakeCache) (*Detector, *collector) {
	t.Helper()
	c := &collector{}
	d := New(Options{Interval: -1, Cluster: kcpCluster, OnFinding: c.add, SharedWatchObject: f.sharedWatchObject})
	t.Cleanup(d.Stop)
	return d, c
}

// configMapStore is a fake cache holding the ConfigMap ns/cm, wrapped for
// configmaps by a test detector.
func configMapStore(t *testing.T) (*fakeCache, *Detector, *collector, storage.Interface) {
	t.Helper()
	f := newFakeCache()
	f.put("/configmaps/root/ns/cm", configMap("ns", "cm"))
	d, c := newTestDetector(t, f)
	return f, d, c, d.Wrap(f, configMaps)
}

// TestListMutations: each synthetic write to a list item that goes through
// memory shared with the cache is one finding naming the field; writes to
// the item's own struct are not.
func TestListMutations(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*rbacv1.ClusterRoleList)
		want   []string // nil: no finding
	}{
		{"label", func(l *rbacv1.ClusterRoleList) { l.Items[0].Labels["leak"] = "x" }, []string{`metadata.labels["leak"]`}},
		{"annotation", func(l *rbacv1.ClusterRoleList) { l.Items[0].Annotations["kcp.io/original-api-version"] = "" },
			[]string{`metadata.annotations["kcp.io/original-api-version"]`}},
		{"annotation deleted", func(l *rbacv1.ClusterRoleList) { delete(l.Items[0].Annotations, clusterAnnotation) },
			[]string{`metadata.annotations["kcp.io/cluster"]`}},
		{"slice element", func(l *rbacv1.ClusterRoleList) { l.Items[0].Rules[0].Verbs[1] = "delete" }, []string{"rules[0].verbs[1]"}},
		{"nested field behind a pointer", func(l *rbacv1.ClusterRoleList) {
			l.Items[0].AggregationRule.ClusterRoleSelectors[0].MatchLabels["aggregate"] = "no"
		}, []string{`aggregationRule.clusterRoleSelectors[0].matchLabels["aggregate"]`}},
		{"pointer target", func(l *rbacv1.ClusterRoleList) { *l.Items[0].OwnerReferences[0].Controller = false },
			[]string{"metadata.ownerReferences[0].controller"}},
		{"struct in a shared slice", func(l *rbacv1.ClusterRoleList) { l.Items[0].OwnerReferences[0].Name = "other" },
			[]string{"metadata.ownerReferences[0].name"}},
		{"two fields", func(l *rbacv1.ClusterRoleList) {
			l.Items[0].Labels["a"] = "1"
			l.Items[0].Rules[0].APIGroups[0] = "apps"
		}, []string{`metadata.labels["a"]`, "rules[0].apiGroups[0]"}},

		// The item is the request's own struct: these are harmless.
		{"private: name", func(l *rbacv1.ClusterRoleList) { l.Items[0].Name = "renamed" }, nil},
		{"private: resourceVersion", func(l *rbacv1.ClusterRoleList) { l.Items[0].ResourceVersion = "999" }, nil},
		{"private: labels replaced", func(l *rbacv1.ClusterRoleList) {
			l.Items[0].Labels = map[string]string{"new": "map"}
			l.Items[0].Labels["more"] = "x"
		}, nil},
		{"private: annotations copied on write", func(l *rbacv1.ClusterRoleList) {
			a := make(map[string]string, len(l.Items[0].Annotations)+1)
			for k, v := range l.Items[0].Annotations {
				a[k] = v
			}
			a["kcp.io/original-api-version"] = "rbac.authorization.k8s.io/v1"
			l.Items[0].Annotations = a
		}, nil},
		{"private: rules dropped", func(l *rbacv1.ClusterRoleList) { l.Items[0].Rules = nil }, nil},
		{"private: item replaced", func(l *rbacv1.ClusterRoleList) { l.Items[0] = rbacv1.ClusterRole{} }, nil},
		{"private: type meta", func(l *rbacv1.ClusterRoleList) { l.Items[0].APIVersion, l.Items[0].Kind = "v9", "Other" }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCache()
			cached := f.put("/clusterroles/root/a", clusterRole("a"))
			f.put("/clusterroles/root/b", clusterRole("b"))
			before := cached.DeepCopyObject()
			d, c := newTestDetector(t, f)
			s := d.Wrap(f, clusterRoles)

			ctx, done := requestCtx(t, "list", "/apis/rbac.authorization.k8s.io/v1/clusterroles")
			list := listClusterRoles(t, s, ctx)
			if len(list.Items) != 2 || d.Tracked() != 2 {
				t.Fatalf("listed %d, tracked %d; want 2, 2", len(list.Items), d.Tracked())
			}
			tc.mutate(list)
			done()
			waitFor(t, func() bool { return d.Tracked() == 0 || len(c.all()) > 0 }, "completion comparison")
			d.Stop()

			cacheChanged := !cmp.Equal(before, cached)
			fs := c.all()
			if tc.want == nil {
				if len(fs) != 0 {
					t.Fatalf("harmless write reported: %v", fs)
				}
				if cacheChanged {
					t.Fatalf("the harmless write changed the cache:\n%s", cmp.Diff(before, cached))
				}
				return
			}
			if !cacheChanged {
				t.Fatal("the synthetic write did not reach the cache: the test proves nothing")
			}
			if len(fs) != 1 {
				t.Fatalf("%d findings, want 1: %v", len(fs), fs)
			}
			got := fs[0]
			if diff := cmp.Diff(tc.want, got.Paths); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
			want := Finding{Resource: "clusterroles.rbac.authorization.k8s.io", Cluster: "root", Name: "a", UID: "uid--clusterroles-root-a",
				ResourceVersion: "1", HandOut: "list", Sharing: SharingShared, Trigger: "completion",
				Request: Request{Verb: "list", Path: "/apis/rbac.authorization.k8s.io/v1/clusterroles"}}
			if diff := cmp.Diff(want, got, ignoreVolatile); diff != "" {
				t.Errorf("finding (-want +got):\n%s", diff)
			}
			if got.Diff == "" || got.HandedOut.IsZero() || got.DetectedAt.Before(got.HandedOut) {
				t.Errorf("diff %q, handed out %v, detected %v", got.Diff, got.HandedOut, got.DetectedAt)
			}
		})
	}
}

var ignoreVolatile = cmp.FilterPath(func(p cmp.Path) bool {
	switch p.Last().String() {
	case ".Paths", ".Diff", ".HandedOut", ".DetectedAt":
		return true
	}
	return false
}, cmp.Ignore())

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestGet: a Get served from the cache (resourceVersion set) shares the
// cached maps; a Get served by the storage below (no resourceVersion: a
// fresh decode) does not, and writing it is not reported.
func TestGet(t *testing.T) {
	for _, tc := range []struct {
		name, rv    string
		mutate      func(*corev1.ConfigMap)
		wantPaths   []string
		wantSharing string
	}{
		{"cache: data", "0", func(cm *corev1.ConfigMap) { cm.Data["k"] = "changed" }, []string{`data["k"]`}, SharingShared},
		{"cache: annotation", "5", func(cm *corev1.ConfigMap) { cm.Annotations["x"] = "y" }, []string{`metadata.annotations["x"]`}, SharingShared},
		{"cache: own struct", "0", func(cm *corev1.ConfigMap) { cm.Namespace, cm.Data = "elsewhere", nil }, nil, SharingShared},
		{"storage: data", "", func(cm *corev1.ConfigMap) { cm.Data["k"] = "changed" }, nil, SharingPrivate},
		{"storage: annotation", "", func(cm *corev1.ConfigMap) { cm.Annotations["x"] = "y" }, nil, SharingPrivate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCache()
			cached := f.put("/configmaps/root/ns/cm", configMap("ns", "cm"))
			before := cached.DeepCopyObject()
			d, c := newTestDetector(t, f)
			s := d.Wrap(f, configMaps)
			sharingBefore := handouts(configMaps, "get", tc.wantSharing)

			ctx, done := requestCtx(t, "get", "/api/v1/namespaces/ns/configmaps/cm")
			got := &corev1.ConfigMap{}
			if err := s.Get(ctx, "/configmaps/root/ns/cm", storage.GetOptions{ResourceVersion: tc.rv}, got); err != nil {
				t.Fatal(err)
			}
			if n := handouts(configMaps, "get", tc.wantSharing) - sharingBefore; n != 1 {
				t.Errorf("handouts_total{sharing=%q} grew by %v, want 1", tc.wantSharing, n)
			}
			tc.mutate(got)
			done()
			d.Stop()
			fs := c.all()
			if tc.wantPaths == nil {
				if len(fs) != 0 {
					t.Fatalf("reported: %v", fs)
				}
				if !cmp.Equal(before, cached) {
					t.Fatalf("the cache changed although nothing was reported:\n%s", cmp.Diff(before, cached))
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("%d findings, want 1: %v", len(fs), fs)
			}
			if diff := cmp.Diff(tc.wantPaths, fs[0].Paths); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
			if fs[0].HandOut != "get" || fs[0].Namespace != "ns" || fs[0].Name != "cm" || fs[0].Resource != "configmaps" || fs[0].Request.Verb != "get" {
				t.Errorf("finding %+v", fs[0])
			}
		})
	}
}

func handouts(gr schema.GroupResource, op, sharing string) float64 {
	v, _ := testutil.GetCounterMetricValue(handoutsTotal.WithLabelValues(gr.Group, gr.Resource, op, sharing))
	return v
}

// TestListSharing: a list the storage served with its own copies (as when
// the cacher delegates to etcd) is classified private and not tracked, so a
// write to it is not reported. When the cache's answer no longer has the
// object at the handed-out resourceVersion, the hand-out is tracked as
// "unknown" and a write through it is still found.
func TestListSharing(t *testing.T) {
	for _, tc := range []struct {
		name        string
		setup       func(f *fakeCache)
		wantTracked int
		wantSharing string // "": no finding
	}{
		{"served by storage", func(f *fakeCache) { f.listFromStorage = true }, 0, ""},
		{"updated meanwhile", func(f *fakeCache) {
			f.afterFirstList = func() { f.put("/clusterroles/root/a", clusterRole("a")) }
		}, 1, SharingUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCache()
			f.put("/clusterroles/root/a", clusterRole("a"))
			tc.setup(f)
			d, c := newTestDetector(t, f)
			s := d.Wrap(f, clusterRoles)
			ctx, done := requestCtx(t, "list", "/apis/rbac.authorization.k8s.io/v1/clusterroles")
			list := listClusterRoles(t, s, ctx)
			if d.Tracked() != tc.wantTracked {
				t.Fatalf("tracked %d, want %d", d.Tracked(), tc.wantTracked)
			}
			list.Items[0].Labels["x"] = "y"
			done()
			d.Stop()
			fs := c.all()
			if tc.wantSharing == "" {
				if len(fs) != 0 {
					t.Fatalf("a write to the storage's private copy was reported: %v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Sharing != tc.wantSharing || fs[0].ResourceVersion != "1" {
				t.Fatalf("findings %v, want one with sharing %s at resourceVersion 1", fs, tc.wantSharing)
			}
		})
	}
}

// TestListSelectorProbe: the re-read uses the list's selectors (and no
// limit), so items of a filtered list find their twins.
func TestListSelectorProbe(t *testing.T) {
	f := newFakeCache()
	f.put("/configmaps/root/ns/a", configMap("ns", "a"))
	other := configMap("ns", "b")
	other.Labels = map[string]string{"app": "other"}
	f.put("/configmaps/root/ns/b", other)
	d, _ := newTestDetector(t, f)
	s := d.Wrap(f, configMaps)
	before := handouts(configMaps, "list", SharingShared)
	ctx, _ := requestCtx(t, "list", "/api/v1/configmaps")
	pred := storage.Everything
	pred.Label = labels.SelectorFromSet(labels.Set{"app": "demo"})
	pred.Limit = 1
	list := &corev1.ConfigMapList{}
	if err := s.GetList(ctx, "/configmaps/", storage.ListOptions{Recursive: true, Predicate: pred}, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || handouts(configMaps, "list", SharingShared)-before != 1 {
		t.Fatalf("items %d, shared hand-outs %v; want 1, 1", len(list.Items), handouts(configMaps, "list", SharingShared)-before)
	}
}

// TestWatch: an event object that is the cached object is shared as a
// whole (even its top-level fields); a deep-copied event is private.
func TestWatch(t *testing.T) {
	for _, tc := range []struct {
		name      string
		shared    bool
		mutate    func(*corev1.ConfigMap)
		wantPaths []string
	}{
		{"shared: annotation", true, func(cm *corev1.ConfigMap) { cm.Annotations["x"] = "y" }, []string{`metadata.annotations["x"]`}},
		{"shared: top-level field", true, func(cm *corev1.ConfigMap) { cm.ResourceVersion = "42" }, []string{"metadata.resourceVersion"}},
		{"shared: type meta", true, func(cm *corev1.ConfigMap) { cm.APIVersion = "v1" }, []string{"apiVersion"}},
		{"private copy", false, func(cm *corev1.ConfigMap) { cm.Annotations["x"] = "y" }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, d, c, s := configMapStore(t)
			ctx, _ := requestCtx(t, "watch", "/api/v1/configmaps")
			w, err := s.Watch(ctx, "/configmaps/", storage.ListOptions{Recursive: true, Predicate: storage.Everything})
			if err != nil {
				t.Fatal(err)
			}
			if tc.shared {
				f.Emit(watch.Modified, "/configmaps/root/ns/cm")
			} else {
				f.EmitCopy(watch.Modified, "/configmaps/root/ns/cm")
			}
			ev := <-w.ResultChan()
			tc.mutate(ev.Object.(*corev1.ConfigMap))
			w.Stop()
			waitFor(t, func() bool { return d.Tracked() == 0 }, "the watch to end")
			d.Stop()
			fs := c.all()
			if tc.wantPaths == nil {
				if len(fs) != 0 {
					t.Fatalf("reported: %v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("%d findings, want 1: %v", len(fs), fs)
			}
			if diff := cmp.Diff(tc.wantPaths, fs[0].Paths); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
			if fs[0].HandOut != "watch" || fs[0].Request.Verb != "watch" {
				t.Errorf("finding %+v", fs[0])
			}
		})
	}
}

// TestPeriodic: a write while the request still runs is found by the
// periodic comparison, before the request completes.
func TestPeriodic(t *testing.T) {
	f := newFakeCache()
	f.put("/configmaps/root/ns/cm", configMap("ns", "cm"))
	c := &collector{}
	d := New(Options{Interval: 200 * time.Millisecond, OnFinding: c.add})
	t.Cleanup(d.Stop)
	s := d.Wrap(f, configMaps)
	ctx, _ := requestCtx(t, "list", "/api/v1/configmaps")
	list := listConfigMaps(t, s, ctx)
	list.Items[0].Labels["late"] = "write"
	// The write happens before the first tick; taking the detector's lock
	// orders it before the comparison for the race detector too.
	_ = d.Tracked()
	waitFor(t, func() bool { return len(c.all()) > 0 }, "the periodic comparison")
	if fs := c.all(); len(fs) != 1 || fs[0].Trigger != "periodic" {
		t.Fatalf("findings %v, want one by the periodic comparison", fs)
	}
}

// TestRepeatedWrites: each distinct write to a held object is a finding
// against the state reported before.
func TestRepeatedWrites(t *testing.T) {
	_, d, c, s := configMapStore(t)
	ctx, _ := requestCtx(t, "list", "/api/v1/configmaps")
	list := listConfigMaps(t, s, ctx)
	list.Items[0].Labels["first"] = "write"
	d.CompareNow()
	d.CompareNow() // nothing new
	list.Items[0].Labels["second"] = "write"
	d.CompareNow()
	fs := c.all()
	if len(fs) != 2 || !cmp.Equal(fs[0].Paths, []string{`metadata.labels["first"]`}) || !cmp.Equal(fs[1].Paths, []string{`metadata.labels["second"]`}) {
		t.Fatalf("findings %v, want first then second", fs)
	}
}

// TestMaxAge: a hand-out whose context never ends is compared once more and
// dropped after MaxAge.
func TestMaxAge(t *testing.T) {
	f := newFakeCache()
	f.put("/configmaps/root/ns/cm", configMap("ns", "cm"))
	c := &collector{}
	d := New(Options{Interval: 5 * time.Millisecond, MaxAge: 20 * time.Millisecond, OnFinding: c.add})
	t.Cleanup(d.Stop)
	s := d.Wrap(f, configMaps)
	cm := &corev1.ConfigMap{}
	if err := s.Get(context.Background(), "/configmaps/root/ns/cm", storage.GetOptions{ResourceVersion: "0"}, cm); err != nil {
		t.Fatal(err)
	}
	if d.Tracked() != 1 {
		t.Fatalf("tracked %d", d.Tracked())
	}
	waitFor(t, func() bool { return d.Tracked() == 0 }, "expiry")
	cm.Data["k"] = "too late"
	d.CompareNow()
	if fs := c.all(); len(fs) != 0 {
		t.Fatalf("findings after expiry: %v", fs)
	}
}

// TestSameChangeReportedOnce: two requests hold the same cached object; one
// write is one finding.
func TestSameChangeReportedOnce(t *testing.T) {
	_, d, c, s := configMapStore(t)
	ctx1, done1 := requestCtx(t, "list", "/api/v1/configmaps")
	ctx2, done2 := requestCtx(t, "list", "/api/v1/configmaps")
	l1 := listConfigMaps(t, s, ctx1)
	listConfigMaps(t, s, ctx2)
	l1.Items[0].Data["k"] = "x"
	done2()
	done1()
	d.Stop()
	if fs := c.all(); len(fs) != 1 {
		t.Fatalf("%d findings, want 1: %v", len(fs), fs)
	}
}

// TestRequestAttribution: behind WithRequest, a finding names the request
// as the client sent it (method, path, query, Accept) and the verb from the
// request info.
func TestRequestAttribution(t *testing.T) {
	f := newFakeCache()
	f.put("/clusterroles/root/a", clusterRole("a"))
	d, c := newTestDetector(t, f)
	s := d.Wrap(f, clusterRoles)

	api := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		list := &rbacv1.ClusterRoleList{}
		if err := s.GetList(req.Context(), "/clusterroles/", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		list.Items[0].Annotations["kcp.io/original-api-version"] = ""
	})
	// A stand-in for the chain: request info from a rewritten path.
	withInfo := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := genericapirequest.WithRequestInfo(req.Context(), &genericapirequest.RequestInfo{Verb: "list", Path: "/apis/rbac.authorization.k8s.io/v1/clusterroles"})
		api.ServeHTTP(w, req.WithContext(ctx))
	})
	h := d.WithRequest(withInfo)
	accept := partialmeta.ListAccept(partialmeta.V1)
	req := httptest.NewRequest(http.MethodGet, "/clusters/*/apis/rbac.authorization.k8s.io/v1/clusterroles?resourceVersion=0", nil)
	req.Header.Set("Accept", accept)
	ctx, cancel := context.WithCancel(req.Context())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req.WithContext(ctx))
	cancel() // the server cancels the request context when ServeHTTP returns
	d.Stop()
	fs := c.all()
	if len(fs) != 1 {
		t.Fatalf("%d findings, want 1: %v", len(fs), fs)
	}
	want := Request{Verb: "list", Method: "GET", Path: "/clusters/*/apis/rbac.authorization.k8s.io/v1/clusterroles", Query: "resourceVersion=0", Accept: accept}
	if diff := cmp.Diff(want, fs[0].Request); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if s := fs[0].String(); !strings.Contains(s, `metadata.annotations["kcp.io/original-api-version"]`) || !strings.Contains(s, "root|a") || !strings.Contains(s, accept) {
		t.Errorf("String() = %s", s)
	}
}

// TestMetricAndLog: a finding increments findings_total.
func TestMetric(t *testing.T) {
	_, d, _, s := configMapStore(t)
	counter := findingsTotal.WithLabelValues("", "configmaps", "list")
	before, _ := testutil.GetCounterMetricValue(counter)
	ctx, done := requestCtx(t, "list", "/api/v1/configmaps")
	list := listConfigMaps(t, s, ctx)
	list.Items[0].Data["k"] = "x"
	done()
	d.Stop()
	after, _ := testutil.GetCounterMetricValue(counter)
	if after-before != 1 {
		t.Fatalf("findings_total grew by %v, want 1", after-before)
	}
}

// fakeTB records what NewForTest does with a test.
type fakeTB struct {
	errors   []string
	cleanups []func()
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }

// TestNewForTest: in test mode a finding fails the test, including one only
// the final comparison at cleanup sees.
func TestNewForTest(t *testing.T) {
	f := newFakeCache()
	f.put("/configmaps/root/ns/cm", configMap("ns", "cm"))
	tb := &fakeTB{}
	d := NewForTest(tb, Options{Interval: -1})
	s := d.Wrap(f, configMaps)
	list := &corev1.ConfigMapList{}
	if err := s.GetList(context.Background(), "/configmaps/", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list); err != nil {
		t.Fatal(err)
	}
	list.Items[0].Labels["x"] = "y"
	if len(tb.errors) != 0 {
		t.Fatalf("failed before cleanup: %v", tb.errors)
	}
	for _, fn := range tb.cleanups {
		fn()
	}
	if len(tb.errors) != 1 || !strings.Contains(tb.errors[0], `metadata.labels["x"]`) {
		t.Fatalf("test errors %q, want one naming metadata.labels[\"x\"]", tb.errors)
	}
}

// TestNilDetector: a nil detector is off and returns what it is given.
func TestNilDetector(t *testing.T) {
	var d *Detector
	f := newFakeCache()
	if s := d.Wrap(f, configMaps); s != storage.Interface(f) {
		t.Error("Wrap wrapped")
	}
	if d.Decorator(nil) != nil {
		t.Error("Decorator(nil)")
	}
	h := http.NotFoundHandler()
	if fmt.Sprintf("%p", d.WithRequest(h)) != fmt.Sprintf("%p", h) {
		t.Error("WithRequest wrapped")
	}
	d.Stop()
	d.CompareNow()
	if d.Findings() != nil || d.Tracked() != 0 {
		t.Error("nil detector has state")
	}
}

func TestEnabledFromEnv(t *testing.T) {
	for v, want := range map[string]bool{"": false, "true": true, "1": true, "false": false, " TRUE ": true} {
		t.Setenv(EnvVar, v)
		got, err := EnabledFromEnv()
		if err != nil || got != want {
			t.Errorf("%s=%q: %v, %v; want %v", EnvVar, v, got, err, want)
		}
	}
	t.Setenv(EnvVar, "yes please")
	if _, err := EnabledFromEnv(); err == nil || !strings.Contains(err.Error(), EnvVar) {
		t.Errorf("bad value: %v", err)
	}
	os.Unsetenv(EnvVar)
}

// TestUnstructuredPaths: paths into unstructured content use the same JSON
// notation.
func TestUnstructuredPaths(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "annotations": map[string]any{"a": "b"}},
		"spec":     map[string]any{"list": []any{"x", map[string]any{"deep": int64(1)}}},
	}}
	after := u.DeepCopy()
	after.Object["apiVersion"] = "meta.k8s.io/v1"
	after.Object["metadata"].(map[string]any)["annotations"].(map[string]any)["kcp.io/original-api-version"] = "example.io/v1"
	after.Object["spec"].(map[string]any)["list"].([]any)[1].(map[string]any)["deep"] = int64(2)
	paths, diff := changes(u, after)
	want := []string{"apiVersion", `metadata.annotations["kcp.io/original-api-version"]`, "spec.list[1].deep"}
	if d := cmp.Diff(want, paths); d != "" {
		t.Errorf("paths (-want +got):\n%s\ndiff:\n%s", d, diff)
	}
}

func TestFindingLines(t *testing.T) {
	f := Finding{Resource: "configmaps", Name: "cm", Paths: []string{`data["k"]`}, Diff: "-a\n+b\n", Request: Request{Verb: "list", Accept: "application/json"}}
	text := "noise\n" + FormatLine(f) + "I0101 klog line\n" + FormatLine(f)
	got, err := ParseFindings(text)
	if err != nil || len(got) != 2 || !cmp.Equal(got[0], f) {
		t.Fatalf("ParseFindings: %v, %v", got, err)
	}
	if _, err := ParseFindings(LinePrefix + "{not json\n"); err == nil {
		t.Error("a broken line was accepted")
	}
}

// TestSharesMemory: the sharing test sees shared maps, slices and pointers
// and ignores process-wide pointers in unexported fields (time locations).
func TestSharesMemory(t *testing.T) {
	a := configMap("ns", "cm")
	a.CreationTimestamp = metav1.Now().Rfc3339Copy()
	b := a.DeepCopy()
	if sharesMemory(valueOf(a), valueOf(b), 0) {
		t.Error("a deep copy shares memory")
	}
	c := *a
	if !sharesMemory(valueOf(a), valueOf(&c), 0) {
		t.Error("a struct copy shares nothing")
	}
	var _ runtime.Object = a
}

func valueOf(o runtime.Object) reflect.Value { return reflect.ValueOf(o) }

// internalRole stands in for an internal API type: no JSON tags.
type internalRole struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Rules []internalRule
}

type internalRule struct {
	APIGroups       []string
	NonResourceURLs []string
}

func (r *internalRole) DeepCopyObject() runtime.Object {
	c := *r
	r.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Rules = nil
	for _, x := range r.Rules {
		c.Rules = append(c.Rules, internalRule{APIGroups: append([]string(nil), x.APIGroups...), NonResourceURLs: append([]string(nil), x.NonResourceURLs...)})
	}
	return &c
}

// TestInternalTypePaths: untagged internal types get the versioned JSON
// names.
func TestInternalTypePaths(t *testing.T) {
	before := &internalRole{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}, Rules: []internalRule{{APIGroups: []string{""}, NonResourceURLs: []string{"/a"}}}}
	after := before.DeepCopyObject().(*internalRole)
	after.Annotations["kcp.io/original-api-version"] = ""
	after.Rules[0].NonResourceURLs[0] = "/b"
	paths, _ := changes(before, after)
	want := []string{`metadata.annotations["kcp.io/original-api-version"]`, "rules[0].nonResourceURLs[0]"}
	if d := cmp.Diff(want, paths); d != "" {
		t.Errorf("paths (-want +got):\n%s", d)
	}
}

// TestHoldingRequests: holding_requests counts reads whose request has not
// completed (and been compared) yet.
func TestHoldingRequests(t *testing.T) {
	_, _, _, s := configMapStore(t)
	base, _ := testutil.GetGaugeMetricValue(holdingRequests)
	ctx, done := requestCtx(t, "list", "/api/v1/configmaps")
	listConfigMaps(t, s, ctx)
	ctxW, _ := requestCtx(t, "watch", "/api/v1/configmaps")
	w, err := s.Watch(ctxW, "/configmaps/", storage.ListOptions{Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := testutil.GetGaugeMetricValue(holdingRequests); v-base != 2 {
		t.Fatalf("holding_requests = %v over the base, want 2", v-base)
	}
	done()
	w.Stop()
	waitFor(t, func() bool { v, _ := testutil.GetGaugeMetricValue(holdingRequests); return v == base }, "holding_requests to drop")
}

// listConfigMaps lists every ConfigMap through s, as a LIST request with ctx does.
func listConfigMaps(t *testing.T, s storage.Interface, ctx context.Context) *corev1.ConfigMapList {
	t.Helper()
	return listAll(t, s, ctx, "/configmaps/", &corev1.ConfigMapList{})
}

// listClusterRoles lists every ClusterRole through s, as a LIST request with ctx does.
func listClusterRoles(t *testing.T, s storage.Interface, ctx context.Context) *rbacv1.ClusterRoleList {
	t.Helper()
	return listAll(t, s, ctx, "/clusterroles/", &rbacv1.ClusterRoleList{})
}

func listAll[L runtime.Object](t *testing.T, s storage.Interface, ctx context.Context, key string, list L) L {
	t.Helper()
	if err := s.GetList(ctx, key, storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list); err != nil {
		t.Fatal(err)
	}
	return list
}
