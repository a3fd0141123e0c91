package bench

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"
)

// liveHeapObjects models the rest of a server's heap: a real kcp shard keeps
// every workspace's cached objects live, so each GC cycle marks far more than
// the objects one benchmark serves, and is triggered less often. Without it,
// the benchmark's heap is only the served objects, GC runs every few requests
// and the cost of each allocated (or retained) byte is overstated.
var liveHeapObjects = flag.Int("bench.liveheap", 100_000, "cached ClusterRoles kept live next to the served ones, to give the GC a server-sized heap (0: none)")

func TestMain(m *testing.M) {
	flag.Parse()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	liveHeap := newCachedClusterRoles(*liveHeapObjects, 3)
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "bench: live heap of %d cached ClusterRoles: %d MiB\n", len(liveHeap), (after.HeapAlloc-before.HeapAlloc)>>20)
	}
	code := m.Run()
	runtime.KeepAlive(liveHeap)
	os.Exit(code)
}
