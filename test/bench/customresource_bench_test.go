package bench

import (
	"context"
	"fmt"
	"testing"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/handlers"
)

// customResourceLister serves LISTs of a custom resource the way its watch
// cache does: the items' content is the cached objects' own.
type customResourceLister struct {
	cached []*unstructured.Unstructured
}

func (l *customResourceLister) NewList() runtime.Object { return &unstructured.UnstructuredList{} }

func (l *customResourceLister) List(context.Context, *metainternalversion.ListOptions) (runtime.Object, error) {
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList"}}
	list.SetResourceVersion("5000")
	list.Items = make([]unstructured.Unstructured, len(l.cached))
	for i, u := range l.cached {
		list.Items[i] = *u
	}
	return list, nil
}

func (l *customResourceLister) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, fmt.Errorf("tables are not benchmarked")
}

// newCachedWidgets returns n custom resources with the labels and the number
// of annotations of newCachedClusterRoles; converted says whether kcp's
// wildcard partial-metadata converter already set kcp.io/original-api-version,
// as it does where a wildcard partial-metadata LIST of a CRD is served.
func newCachedWidgets(n, annotations int, converted bool) []*unstructured.Unstructured {
	widgets := make([]*unstructured.Unstructured, n)
	for i := range widgets {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("example.com/v1")
		u.SetKind("Widget")
		u.SetName(fmt.Sprintf("widget-%05d", i))
		u.SetResourceVersion(fmt.Sprint(1000 + i))
		u.SetLabels(map[string]string{"app": "bench", "tier": "crd", "index": fmt.Sprint(i)})
		a := map[string]string{"kcp.io/cluster": "root"}
		for j := 1; j < annotations; j++ {
			a[fmt.Sprintf("example.com/note-%02d", j)] = "cached"
		}
		if converted {
			a[handlers.KCPOriginalAPIVersionAnnotation] = "example.com/v1"
		}
		u.SetAnnotations(a)
		widgets[i] = u
	}
	return widgets
}

// BenchmarkWildcardPartialMetadataListCustomResource is
// BenchmarkWildcardPartialMetadataList for unstructured custom resources, the
// objects the annotation exists for: with the converter's value already set
// (nothing to write) and without it (the carry writes a copy).
func BenchmarkWildcardPartialMetadataListCustomResource(b *testing.B) {
	const n, annotations = 1000, 3
	for _, converted := range []bool{true, false} {
		b.Run(fmt.Sprintf("items=%d/annotations=%d/converted=%t", n, annotations, converted), func(b *testing.B) {
			benchWildcardPartialList(b, &customResourceLister{cached: newCachedWidgets(n, annotations, converted)}, n)
		})
	}
}
