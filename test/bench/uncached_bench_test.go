package bench

import (
	"context"
	"fmt"
	"testing"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/apis/rbac"
)

// storageLister serves LISTs the way storage does when the watch cache does
// not (a LIST delegated to etcd): every request decodes new objects, with new
// maps, so nothing per object version is seen twice.
type storageLister struct {
	cacheLister
}

func (l *storageLister) List(context.Context, *metainternalversion.ListOptions) (runtime.Object, error) {
	list := &rbac.ClusterRoleList{ListMeta: metav1.ListMeta{ResourceVersion: "5000"}, Items: make([]rbac.ClusterRole, len(l.cached))}
	for i, role := range l.cached {
		role.DeepCopyInto(&list.Items[i])
	}
	return list, nil
}

// BenchmarkWildcardPartialMetadataUncached is BenchmarkWildcardPartialMetadataList
// for objects that are new to every request: the worst case for anything
// done once per object version, which here is never reused.
func BenchmarkWildcardPartialMetadataUncached(b *testing.B) {
	for _, annotations := range []int{3, 18} {
		const n = 1000
		b.Run(fmt.Sprintf("items=%d/annotations=%d", n, annotations), func(b *testing.B) {
			benchWildcardPartialList(b, &storageLister{cacheLister{cached: newCachedClusterRoles(n, annotations)}}, n)
		})
	}
}
