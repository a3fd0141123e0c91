// Package bench measures what the carry costs on the list path. Run it twice,
// against the pristine fork (GOWORK=off) and the patched one (the repository's
// go.work), and compare with benchstat: `make bench`.
package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/rbac"

	// Register the internal and v1 rbac types, as kube-apiserver (and kcp) does.
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"

	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
)

// newCachedClusterRoles returns n internal ClusterRoles shaped like the ones a
// kcp shard serves: three labels, a couple of rules, and the given number of
// annotations (at least kcp.io/cluster): the pristine fork writes into that map.
func newCachedClusterRoles(n, annotations int) []*rbac.ClusterRole {
	roles := make([]*rbac.ClusterRole, n)
	for i := range roles {
		a := map[string]string{"kcp.io/cluster": "root"}
		for j := 1; j < annotations; j++ {
			a[fmt.Sprintf("example.com/note-%02d", j)] = "cached"
		}
		roles[i] = &rbac.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{
				Name:            fmt.Sprintf("hammer-%05d", i),
				ResourceVersion: fmt.Sprint(1000 + i),
				Labels:          map[string]string{"app": "bench", "tier": "rbac", "index": fmt.Sprint(i)},
				Annotations:     a,
			},
			Rules: []rbac.PolicyRule{
				{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"configmaps"}},
				{Verbs: []string{"get"}, APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}},
			},
		}
	}
	return roles
}

// cacheLister serves LISTs the way the watch cache does: a fresh list whose
// items are struct copies of the cached objects, so their maps are the cache's.
type cacheLister struct {
	cached []*rbac.ClusterRole
}

func (l *cacheLister) New() runtime.Object     { return &rbac.ClusterRole{} }
func (l *cacheLister) NewList() runtime.Object { return &rbac.ClusterRoleList{} }
func (l *cacheLister) Destroy()                {}

func (l *cacheLister) List(context.Context, *metainternalversion.ListOptions) (runtime.Object, error) {
	list := &rbac.ClusterRoleList{ListMeta: metav1.ListMeta{ResourceVersion: "5000"}, Items: make([]rbac.ClusterRole, len(l.cached))}
	for i, role := range l.cached {
		list.Items[i] = *role
	}
	return list, nil
}

func (l *cacheLister) ConvertToTable(ctx context.Context, obj runtime.Object, opts runtime.Object) (*metav1.Table, error) {
	return rest.NewDefaultTableConvertor(rbac.Resource("clusterroles")).ConvertToTable(ctx, obj, opts)
}

// newScope is the RequestScope kube-apiserver's installer builds for rbac/v1 clusterroles.
func newScope() *handlers.RequestScope {
	gv := schema.GroupVersion{Group: rbac.GroupName, Version: "v1"}
	return &handlers.RequestScope{
		Namer:                    handlers.ContextBasedNaming{Namer: meta.NewAccessor(), ClusterScoped: true},
		Serializer:               legacyscheme.Codecs,
		ParameterCodec:           legacyscheme.ParameterCodec,
		Creater:                  legacyscheme.Scheme,
		Convertor:                legacyscheme.Scheme,
		Defaulter:                legacyscheme.Scheme,
		Typer:                    legacyscheme.Scheme,
		UnsafeConvertor:          runtime.UnsafeObjectConvertor(legacyscheme.Scheme),
		EquivalentResourceMapper: runtime.NewEquivalentResourceRegistry(),
		TableConvertor:           rest.NewDefaultTableConvertor(rbac.Resource("clusterroles")),
		Resource:                 gv.WithResource("clusterroles"),
		Kind:                     gv.WithKind("ClusterRole"),
		MetaGroupVersion:         metav1.SchemeGroupVersion,
		HubGroupVersion:          schema.GroupVersion{Group: rbac.GroupName, Version: runtime.APIVersionInternal},
	}
}

// newRequest is a request of shape s (a wildcard one: the benchmarks have no
// logical cluster) for /clusters/*/apis/rbac.authorization.k8s.io/v1/clusterroles
// as it reaches the handler after kcp's filters: the wildcard cluster, whether
// it asks for partial metadata, and the request info in the context.
func newRequest(b *testing.B, s requestshape.Shape) *http.Request {
	b.Helper()
	if err := s.Validate(); err != nil || s.Scope != requestshape.Wildcard || s.KCPMetadataClient {
		b.Fatalf("request shape %s: want a valid wildcard request sent over HTTP (%v)", s, err)
	}
	target := "/apis/rbac.authorization.k8s.io/v1/clusterroles"
	if q := s.Query(requestshape.Params{}).Encode(); q != "" {
		target += "?" + q
	}
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Header.Set("Accept", s.AcceptHeader())
	ctx := request.WithCluster(req.Context(), request.Cluster{Wildcard: true, PartialMetadataRequest: s.Accept.Partial()})
	ctx = request.WithRequestInfo(ctx, &request.RequestInfo{
		IsResourceRequest: true,
		Path:              req.URL.Path,
		Verb:              string(s.Verb),
		APIPrefix:         "apis",
		APIGroup:          rbac.GroupName,
		APIVersion:        "v1",
		Resource:          "clusterroles",
	})
	return req.WithContext(ctx)
}

// listCases are the list sizes measured with three annotations per object, and
// one size with the 18 the hammer seeds (16 of its own, kcp.io/cluster, and
// the label writers' bookkeeping), to show whether the cost grows with the map.
var listCases = []struct{ items, annotations int }{
	{100, 3}, {1000, 3}, {10000, 3}, {1000, 18}, {10000, 18},
}

// BenchmarkWildcardPartialMetadataList serves a wildcard partial-metadata LIST
// of n cached ClusterRoles through the fork's real list handler, one request
// at a time (the pristine fork survives that), including JSON encoding.
func BenchmarkWildcardPartialMetadataList(b *testing.B) {
	for _, c := range listCases {
		b.Run(fmt.Sprintf("items=%d/annotations=%d", c.items, c.annotations), func(b *testing.B) {
			benchWildcardPartialList(b, &cacheLister{cached: newCachedClusterRoles(c.items, c.annotations)}, c.items)
		})
	}
}

// benchWildcardPartialList serves a wildcard partial-metadata LIST of n items
// from lister through the fork's ListResource handler, once to check it, then
// b.Loop times, reporting allocations and ns/item.
func benchWildcardPartialList(b *testing.B, lister rest.Lister, n int) {
	b.Helper()
	handler := handlers.ListResource(lister, nil, newScope(), false, 0)
	req := newRequest(b, requestshape.BenchList)
	serve := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec
	}
	if rec := serve(); rec.Code != http.StatusOK {
		b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		serve()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/item")
}

// BenchmarkAsPartialObjectMetadata is the conversion alone, on one cached
// typed object with three labels and three annotations.
func BenchmarkAsPartialObjectMetadata(b *testing.B) {
	role := newCachedClusterRoles(1, 3)[0]
	b.ReportAllocs()
	for b.Loop() {
		_ = meta.AsPartialObjectMetadata(role)
	}
}
