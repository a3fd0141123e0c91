package cachemutation

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"
)

// The benchmarks read from the fork's real watch cache (100 ConfigMaps in
// one logical cluster) in three modes:
//
//	undecorated  StorageWithCacher's storage as the registry gets it today
//	off          the same through a nil (*Detector).Decorator, i.e. a server
//	             built with the detector wired in but not enabled
//	on           through an enabled detector, including the comparison
//	             at completion (the iteration waits for it)
//
// off must equal undecorated: the nil detector hands back the decorator it
// was given (the benchmark checks that it is the same function and the same
// storage type), so there is nothing to measure but noise. Compare with
//
//	go test -run - -bench . -benchmem -count 10 ./pkg/cachemutation |
//		grep -E '^(Benchmark.*ns/op|goos|goarch|pkg|cpu)' > bench.txt
//	go tool benchstat -col /mode bench.txt
//
// (the grep drops the occasional etcd client warning a stopped test etcd
// leaves between result lines).

const benchObjects = 100

func benchCache(b *testing.B, mode string) *realCache {
	b.Helper()
	var rc *realCache
	switch mode {
	case "undecorated":
		rc = startRealCacheDecorated(b, nil, false)
	case "off":
		var d *Detector
		inner := genericregistry.StorageWithCacher()
		if reflect.ValueOf(d.Decorator(inner)).Pointer() != reflect.ValueOf(inner).Pointer() {
			b.Fatal("a nil detector changed the storage decorator")
		}
		var getter generic.RESTOptionsGetter = &generic.RESTOptions{}
		if d.RESTOptionsGetter(getter) != getter {
			b.Fatal("a nil detector changed the RESTOptionsGetter")
		}
		rc = startRealCacheDecorated(b, nil, true)
		if _, wrappedStorage := rc.s.(*wrapped); wrappedStorage {
			b.Fatal("a nil detector wrapped the storage")
		}
	case "on":
		rc = startRealCacheDecorated(b, &Options{Interval: -1}, true)
		if _, wrappedStorage := rc.s.(*wrapped); !wrappedStorage {
			b.Fatal("the detector did not wrap the storage")
		}
	default:
		b.Fatalf("mode %q", mode)
	}
	for i := 0; i < benchObjects; i++ {
		rc.create(b, fmt.Sprintf("cm-%03d", i))
	}
	return rc
}

// waitCompared waits (spinning, at most 10s) until the detector compared
// and dropped every hand-out, so "on" pays for its comparison.
func waitCompared(b *testing.B, d *Detector) {
	deadline := time.Now().Add(10 * time.Second)
	for d.Tracked() != 0 {
		if time.Now().After(deadline) {
			b.Fatalf("%d objects still tracked 10s after their request ended", d.Tracked())
		}
		runtime.Gosched()
	}
}

func BenchmarkGetList(b *testing.B) {
	for _, mode := range []string{"undecorated", "off", "on"} {
		b.Run("mode="+mode, func(b *testing.B) {
			rc := benchCache(b, mode)
			opts := storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ctx, cancel := context.WithCancel(wildcardCtx(context.Background()))
				list := &corev1.ConfigMapList{}
				if err := rc.s.GetList(ctx, "/configmaps", opts, list); err != nil {
					b.Fatal(err)
				}
				if len(list.Items) != benchObjects {
					b.Fatalf("%d items", len(list.Items))
				}
				cancel()
				if rc.d != nil {
					waitCompared(b, rc.d)
				}
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	for _, mode := range []string{"undecorated", "off", "on"} {
		b.Run("mode="+mode, func(b *testing.B) {
			rc := benchCache(b, mode)
			key := "/configmaps/" + testCluster + "/ns/cm-000"
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ctx, cancel := context.WithCancel(clusterCtx(context.Background()))
				cm := &corev1.ConfigMap{}
				if err := rc.s.Get(ctx, key, storage.GetOptions{ResourceVersion: "0"}, cm); err != nil {
					b.Fatal(err)
				}
				cancel()
				if rc.d != nil {
					waitCompared(b, rc.d)
				}
			}
		})
	}
}
