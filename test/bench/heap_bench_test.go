package bench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/endpoints/handlers"

	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
)

// heapAfterGC returns the live heap once the garbage of earlier iterations,
// and anything only their cleanups still referenced, has been collected.
func heapAfterGC() uint64 {
	runtime.GC()
	time.Sleep(10 * time.Millisecond) // let runtime.AddCleanup functions of the collected objects run
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkWildcardPartialMetadataRetainedHeap measures the heap a wildcard
// partial-metadata LIST leaves behind while the objects it served stay cached:
// whatever the carry keeps per cached object version. Each iteration caches
// 10,000 new ClusterRoles, serves them once, and reports the live heap grown
// past the objects themselves (B-retained/10k-objects). Time per op is
// dominated by the GCs and means nothing here.
func BenchmarkWildcardPartialMetadataRetainedHeap(b *testing.B) {
	const items = 10000
	for _, annotations := range []int{3, 18} {
		b.Run(fmt.Sprintf("items=%d/annotations=%d", items, annotations), func(b *testing.B) {
			req := newRequest(b, requestshape.BenchList)
			var retained int64
			for b.Loop() {
				lister := &cacheLister{cached: newCachedClusterRoles(items, annotations)}
				handler := handlers.ListResource(lister, nil, newScope(), false, 0)
				before := heapAfterGC()
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
				}
				retained += int64(heapAfterGC()) - int64(before)
				runtime.KeepAlive(lister)
			}
			b.ReportMetric(float64(retained)/float64(b.N), "B-retained/10k-objects")
		})
	}
}
