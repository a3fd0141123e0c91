// Package cachemutation is a watch-cache mutation detector for API servers
// built on k8s.io/apiserver: a debugging aid that finds read paths (request
// handlers, response transformations, encoders, admission, ...) that write
// into objects the watch cache shares between requests.
//
// The watch cache never changes an object in place: an update replaces it.
// So any change to memory the cache handed out is a write by a reader, and
// such a write is a latent process crash (two readers writing the same Go map
// abort the runtime) and a cache pollution (later readers see the write).
// The race detector only sees it when two requests overlap; this detector
// sees it at concurrency 1.
//
// # How it hooks in
//
// The detector wraps the storage.Interface a registry gets from its storage
// decorator (generic.RESTOptions.Decorator, genericregistry.StorageWithCacher
// when the watch cache is on):
//
//	d := cachemutation.New(cachemutation.Options{OnFinding: ...})
//	getter = d.RESTOptionsGetter(getter)     // every registry built on getter
//	handler = d.WithRequest(handler)         // outermost filter: method, path, Accept
//
// Both are nil-safe: with a nil *Detector they return their argument, so a
// server that leaves the detector off runs exactly the code it ran before
// (BenchmarkGetList shows it). Enable it with a flag of your server or with
// KCP_CARRY_CACHE_MUTATION_DETECTOR=true (EnabledFromEnv).
//
// # What it compares
//
// Every object the wrapped storage hands out — the object of a Get, each item
// of a GetList, the object of each watch event — is fingerprinted (deep copy)
// at hand-out, and compared again periodically (Options.Interval) while the
// request runs and when the request's context ends (the request completed),
// after which it is forgotten. A difference is a finding.
//
// It compares memory shared with the cache, not the request's own copy. The
// cacher copies each cached object struct-by-value into the caller's object
// (Get) or list item (GetList): the top-level struct is the request's own and
// writing it (item.Name = "x", item.Annotations = newMap, list.Items[i] = y)
// is harmless, while every map, slice and pointer reachable from it is the
// cache's. The detector keeps its own shallow copy of what was handed out (the
// view: same maps, slices and pointers, a struct nobody else has) and compares
// it with the fingerprint, so only writes through shared memory show.
//
// Which hand-outs share memory with the cache is established, not assumed:
// after a Get or GetList the detector re-reads the same objects through the
// same storage with resourceVersion "0" (served by the cache) and checks
// whether the two answers share a map, slice or pointer. Answers served by
// etcd (a Get without resourceVersion, a LIST the cacher delegates) share
// nothing with the cache, are classified "private" and are not tracked; a
// write to them is harmless. If the re-read does not find the same object at
// the same resourceVersion (it was updated or deleted meanwhile, the cache is
// not ready) the hand-out is classified "unknown" and tracked anyway, and a
// finding says so in Finding.Sharing.
//
// Watch events: the cacher sends each live event to every watcher as a
// cachingObject that wraps the cached object itself (its setters copy on
// write, its GetAnnotations/GetLabels/GetObjectKind do not); initial events
// and events of watchers served by etcd are deep copies. The detector tracks
// the object inside a cachingObject (read under the cachingObject's lock; a
// cachingObject that was already copied on write is private) and treats other
// event objects as private. Options.SharedWatchObject overrides that rule for
// storage implementations with other semantics.
//
// A finding (Finding) names the resource, the logical cluster (Options.Cluster),
// namespace, name, resourceVersion and UID of the object, the changed field
// paths (from go-cmp, in JSON field names, e.g.
// metadata.annotations["kcp.io/original-api-version"]) and a diff, and the
// request that held the object: Kubernetes verb, method, path as received,
// query and Accept. It is reported through Options.OnFinding, the metric
// watch_cache_mutation_detector_findings_total (registered in
// k8s.io/component-base/metrics/legacyregistry, so /metrics serves it) and a
// klog error line. NewForTest fails a test on any finding.
//
// # Beside the fork's detector
//
// The carry's detector patch makes the fork's watch cache honour client-go's
// KUBE_CACHE_MUTATION_DETECTOR, which kcp's CI sets: every object the cache
// stores is copied and compared every second, and a change panics the
// server, naming the cache. That one runs in real kcp and sees a write by
// anything, request or not, for the cache's lifetime; make test runs every
// carried kcp with it on. This package stays for what only it sees, which
// the read-path audit (docs/read-path-audit.md) and test/detector's matrix
// need:
//
//   - the request that held the object: verb, method, path, query and
//     Accept, where the fork's names only the cache;
//   - the changed field paths, and whether the hand-out shared memory with
//     the cache at all (a write to a private copy is no finding);
//   - every finding of a run, counted per request shape, where the fork's
//     panics at the first.
//
// # Cost and limits
//
// Off, it costs nothing: nothing is wrapped. On, each Get and GetList pays one
// extra read from the cache and a deep copy per shared object, each watch an
// extra goroutine and a deep copy per event; comparison is a
// reflect.DeepEqual per tracked object. Do not run it in production.
//
//   - Attribution is exact at concurrency 1. When several requests hold the
//     same cached object and one writes it, every holder's comparison sees
//     the change; the first to compare reports it (identical changes are
//     reported once), so under concurrency the named request held the object
//     while it changed but may not be the writer.
//   - The detector reads the cache's memory while comparing. A read path that
//     writes a shared map concurrently can therefore also trip the Go
//     runtime's concurrent map check inside the detector: that crash is the
//     bug, found by another route.
//   - Writes a request makes after its context ended are not seen; hand-outs
//     whose context never ends are dropped after Options.MaxAge, watch events
//     after Options.WatchRetention.
//   - append() into a shared slice with spare capacity writes memory beyond
//     the cache's length; the cache does not see it and neither does the
//     detector.
//   - A write made before the hand-out (e.g. while decoding from etcd, before
//     the object enters the cache) is not a read-path write and is not seen.
package cachemutation
