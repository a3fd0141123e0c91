package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/endpoints/handlers"

	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
)

// eventStream is a watch that delivers its events and ends.
type eventStream chan watch.Event

func (s eventStream) Stop()                          {}
func (s eventStream) ResultChan() <-chan watch.Event { return s }

// cacheWatcher serves watches the way the watch cache does for live events:
// the cacher wraps each event's object in a cachingObject, whose CacheEncode
// hands the handler's encoder a deep copy of the cached object, once per event
// for all watchers that share the encoding. So each event here carries a deep
// copy, made per event like there.
type cacheWatcher struct {
	cacheLister
}

func (w *cacheWatcher) Watch(context.Context, *metainternalversion.ListOptions) (watch.Interface, error) {
	events := make(eventStream, len(w.cached))
	for _, role := range w.cached {
		events <- watch.Event{Type: watch.Modified, Object: role.DeepCopy()}
	}
	close(events)
	return events, nil
}

// BenchmarkWildcardPartialMetadataWatch serves a wildcard partial-metadata
// watch through the fork's real watch handler: each event goes through the
// single-object conversion (asPartialObjectMetadata) and is encoded and
// framed; ns/event is the per-event cost, the deep copy included.
func BenchmarkWildcardPartialMetadataWatch(b *testing.B) {
	const events = 1000
	for _, annotations := range []int{3, 18} {
		b.Run(fmt.Sprintf("events=%d/annotations=%d", events, annotations), func(b *testing.B) {
			watcher := &cacheWatcher{cacheLister{cached: newCachedClusterRoles(events, annotations)}}
			handler := handlers.ListResource(watcher, watcher, newScope(), false, 0)
			req := newRequest(b, requestshape.BenchWatch)
			serve := func() *httptest.ResponseRecorder {
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, req)
				return rec
			}
			if rec := serve(); rec.Code != http.StatusOK || rec.Body.Len() == 0 {
				b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				serve()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/events, "ns/event")
		})
	}
}
