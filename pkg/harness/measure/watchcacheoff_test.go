package measure

import (
	"strings"
	"testing"
	"time"
)

func TestWatchCacheOffOptionsValidate(t *testing.T) {
	o := DefaultWatchCacheOffOptions()
	o.StockBinary, o.CarriedBinary = "a", "b"
	if err := o.Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, bad := range []func(*WatchCacheOffOptions){
		func(o *WatchCacheOffOptions) { o.StockBinary = "" },
		func(o *WatchCacheOffOptions) { o.Sizes = nil },
		func(o *WatchCacheOffOptions) { o.Sizes = []int{1} },
		func(o *WatchCacheOffOptions) { o.Workspaces = 1 },
		func(o *WatchCacheOffOptions) { o.Rounds = 0 },
		func(o *WatchCacheOffOptions) { o.Window = 0 },
	} {
		c := o
		bad(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

func TestKindCostFinish(t *testing.T) {
	k := &KindCost{Requests: 100, Elapsed: 10 * time.Second, CPU: 2 * time.Second}
	for i := 100; i >= 1; i-- {
		k.Samples = append(k.Samples, time.Duration(i)*time.Millisecond)
	}
	k.finish()
	if k.P50 != 51*time.Millisecond || k.P99 != 100*time.Millisecond {
		t.Errorf("p50 %s, p99 %s; want 51ms, 100ms", k.P50, k.P99)
	}
	if k.PerSecond() != 10 || k.CPUPerRequest() != 20*time.Millisecond {
		t.Errorf("rate %v, CPU per request %s", k.PerSecond(), k.CPUPerRequest())
	}
	if (&KindCost{}).PerSecond() != 0 || (&KindCost{}).CPUPerRequest() != 0 {
		t.Error("an empty KindCost has a rate or CPU per request")
	}
}

func TestWatchCacheOffTable(t *testing.T) {
	kinds := func(p50 time.Duration) map[string]*KindCost {
		m := map[string]*KindCost{}
		for _, k := range costKinds {
			m[k] = &KindCost{Requests: 10, Elapsed: time.Second, CPU: 100 * time.Millisecond, P50: p50, P99: 2 * p50}
		}
		return m
	}
	got := WatchCacheOffTable([]WatchCacheOffCost{{
		Objects: 1000, Workspaces: 5,
		Kinds:           map[string]map[string]*KindCost{StockNoCache: kinds(40 * time.Millisecond), CarriedCache: kinds(4 * time.Millisecond)},
		PeakRSSMiB:      map[string]int64{StockNoCache: 600, CarriedCache: 500},
		RSSAfterSeedMiB: map[string]int64{StockNoCache: 400, CarriedCache: 450},
	}})
	for _, want := range []string{
		"| 1000 | wildcard partial-metadata LIST | 40.0 ms / 4.0 ms | 80.0 ms / 8.0 ms | 10.0 / 10.0 /s | 10.0 ms / 10.0 ms |",
		"| 1000 | watch event delay |",
		"| 1000 | kcp RSS seeded, peak | 400 / 450 MiB | 600 / 500 MiB | | |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
}
