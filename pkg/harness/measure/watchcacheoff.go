package measure

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/partialmeta"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// WatchCacheOffOptions configure the cost of the operators' mitigation: a
// stock kcp started with --watch-cache=false beside the carried kcp with its
// cache, both running at once, measured in alternating rounds.
type WatchCacheOffOptions struct {
	// StockBinary (bin/kcp-pristine) runs with --watch-cache=false,
	// CarriedBinary (bin/kcp) as it is.
	StockBinary, CarriedBinary string
	// Sizes are the numbers of ClusterRoles measured, each spread over
	// Workspaces logical clusters (root and Workspaces-1 new workspaces)
	// on fresh kcps.
	Sizes      []int
	Workspaces int
	// Rounds alternate which kcp goes first; each measures every request
	// kind on each kcp for Window.
	Rounds int
	Window time.Duration
	// ReadyTimeout bounds each kcp's start (default server.KCPReadyTimeout):
	// a kcp seeded with tens of thousands of objects on a busy machine takes
	// longer.
	ReadyTimeout time.Duration
	// Logf receives a line per step; nil discards.
	Logf func(format string, args ...any) `json:"-"`
}

// DefaultWatchCacheOffOptions are make test-watch-cache-off's.
func DefaultWatchCacheOffOptions() WatchCacheOffOptions {
	return WatchCacheOffOptions{Sizes: []int{1000, 10000}, Workspaces: 5, Rounds: 4, Window: 10 * time.Second}
}

// Validate names the first bad option.
func (o WatchCacheOffOptions) Validate() error {
	var errs []error
	if o.StockBinary == "" || o.CarriedBinary == "" {
		errs = append(errs, errors.New("watch-cache-off cost: both kcp binaries are required"))
	}
	if len(o.Sizes) == 0 {
		errs = append(errs, errors.New("watch-cache-off cost: no sizes"))
	}
	for _, n := range o.Sizes {
		if n < o.Workspaces || n > 100000 {
			errs = append(errs, fmt.Errorf("watch-cache-off cost: size %d: want [%d, 100000]", n, o.Workspaces))
		}
	}
	if o.Workspaces < 2 || o.Workspaces > 20 {
		errs = append(errs, fmt.Errorf("watch-cache-off cost: workspaces %d: want [2, 20]", o.Workspaces))
	}
	if o.Rounds < 1 || o.Rounds > 20 || o.Window <= 0 || o.Window > 5*time.Minute {
		errs = append(errs, fmt.Errorf("watch-cache-off cost: %d rounds of %s: want 1 to 20 rounds of at most 5m", o.Rounds, o.Window))
	}
	return errors.Join(errs...)
}

// The request kinds measured, in the order each round sends them.
const (
	WildcardPartialList = "wildcard partial-metadata LIST"
	SingleClusterList   = "single-cluster LIST"
	SingleGet           = "GET"
	WatchDelay          = "watch event delay"
)

var costKinds = []string{WildcardPartialList, SingleClusterList, SingleGet, WatchDelay}

// Variants of the cost measurement.
const (
	StockNoCache = "stock, --watch-cache=false"
	CarriedCache = "carried, watch cache on"
)

// WatchCacheOffCost is one size's measurement.
type WatchCacheOffCost struct {
	Objects    int `json:"objects"`
	Workspaces int `json:"workspaces"`
	// Kinds, by variant, by request kind.
	Kinds map[string]map[string]*KindCost `json:"kinds"`
	// PeakRSSMiB is each kcp's VmHWM at the end of the size, RSSAfterSeedMiB
	// its VmRSS once seeded.
	PeakRSSMiB      map[string]int64 `json:"peakRSSMiB"`
	RSSAfterSeedMiB map[string]int64 `json:"rssAfterSeedMiB"`
}

// KindCost is one request kind's latencies on one kcp over every round,
// and the kcp's CPU time while it answered them.
type KindCost struct {
	Requests int             `json:"requests"`
	Failed   int             `json:"failed"`
	Elapsed  time.Duration   `json:"elapsed"`
	CPU      time.Duration   `json:"cpu"`
	Samples  []time.Duration `json:"-"`
	P50      time.Duration   `json:"p50"`
	P99      time.Duration   `json:"p99"`
}

// PerSecond is the kind's rate from one sequential client.
func (k *KindCost) PerSecond() float64 {
	if k.Elapsed <= 0 {
		return 0
	}
	return float64(k.Requests) / k.Elapsed.Seconds()
}

// CPUPerRequest is kcp's CPU time per answered request.
func (k *KindCost) CPUPerRequest() time.Duration {
	if k.Requests == 0 {
		return 0
	}
	return k.CPU / time.Duration(k.Requests)
}

func (k *KindCost) finish() {
	slices.Sort(k.Samples)
	k.P50, k.P99 = percentile(k.Samples, 0.50), percentile(k.Samples, 0.99)
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// costSlot is one of the two kcps and the logical clusters it was seeded in.
type costSlot struct {
	*kcpSlot
	clusters []string
	hc       *http.Client
	host     string
}

// WatchCacheOff measures the mitigation's cost at each size.
func WatchCacheOff(ctx context.Context, o WatchCacheOffOptions) ([]WatchCacheOffCost, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	stock, carried, cleanup, err := newKCPSlots(&KCPOptions{PristineBinary: o.StockBinary, PatchedBinary: o.CarriedBinary, Logf: logf})
	if err != nil {
		return nil, err
	}
	defer cleanup()
	stock.variant, carried.variant = StockNoCache, CarriedCache
	stock.args = []string{"--watch-cache=false"}
	stock.ready, carried.ready = o.ReadyTimeout, o.ReadyTimeout
	var out []WatchCacheOffCost
	for _, n := range o.Sizes {
		c, err := measureWatchCacheOff(ctx, o, n, []*kcpSlot{stock, carried}, logf)
		if err != nil {
			return out, fmt.Errorf("%d ClusterRoles: %w", n, err)
		}
		out = append(out, *c)
	}
	return out, nil
}

func measureWatchCacheOff(ctx context.Context, o WatchCacheOffOptions, n int, kcps []*kcpSlot, logf func(string, ...any)) (*WatchCacheOffCost, error) {
	perCluster := (n + o.Workspaces - 1) / o.Workspaces
	res := &WatchCacheOffCost{Objects: perCluster * o.Workspaces, Workspaces: o.Workspaces,
		Kinds: map[string]map[string]*KindCost{}, PeakRSSMiB: map[string]int64{}, RSSAfterSeedMiB: map[string]int64{}}
	var slots []*costSlot
	for _, k := range kcps {
		clusters, err := k.fresh(ctx, o.Workspaces)
		if err != nil {
			return nil, err
		}
		if _, err := (clusterRoleSeed{perCluster: perCluster, annotations: hammer.DefaultOptions().Annotations, syncTimeout: 10 * time.Minute}).into(ctx, k, clusters); err != nil {
			return nil, err
		}
		cfg := k.srv.Config()
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, err
		}
		slots = append(slots, &costSlot{kcpSlot: k, clusters: clusters, hc: hc, host: strings.TrimSuffix(cfg.Host, "/")})
		u, err := server.ReadUsage(k.srv.PID())
		if err != nil {
			return nil, err
		}
		res.RSSAfterSeedMiB[k.variant] = u.RSSKiB / 1024
		logf("watch-cache-off: %s kcp seeded with %d ClusterRoles in %d logical clusters (RSS %d MiB, peak %d MiB)", k.variant, res.Objects, len(clusters), u.RSSKiB/1024, u.PeakRSSKiB/1024)
		res.Kinds[k.variant] = map[string]*KindCost{}
		for _, kind := range costKinds {
			res.Kinds[k.variant][kind] = &KindCost{}
		}
	}
	for round := range o.Rounds {
		order := slices.Clone(slots)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, s := range order {
			for _, kind := range costKinds {
				if err := measureKind(ctx, s, kind, perCluster, o.Window, res.Kinds[s.variant][kind]); err != nil {
					return nil, fmt.Errorf("round %d, %s kcp, %s: %w", round+1, s.variant, kind, err)
				}
			}
			k := res.Kinds[s.variant]
			logf("watch-cache-off: %d objects, round %d, %s: wildcard partial LIST %d, single-cluster LIST %d, GET %d, watch events %d so far",
				res.Objects, round+1, s.variant, k[WildcardPartialList].Requests, k[SingleClusterList].Requests, k[SingleGet].Requests, k[WatchDelay].Requests)
		}
	}
	for _, s := range slots {
		u, err := server.ReadUsage(s.srv.PID())
		if err != nil {
			return nil, err
		}
		res.PeakRSSMiB[s.variant] = u.PeakRSSKiB / 1024
		for _, k := range res.Kinds[s.variant] {
			k.finish()
		}
	}
	return res, nil
}

// measureKind sends requests of one kind, one after the other, for window,
// and adds their latencies and kcp's CPU time over the window to into.
func measureKind(ctx context.Context, s *costSlot, kind string, perCluster int, window time.Duration, into *KindCost) error {
	before, err := server.ReadUsage(s.srv.PID())
	if err != nil {
		return err
	}
	start := time.Now()
	var watch *eventStream
	if kind == WatchDelay {
		if watch, err = s.openWatch(ctx); err != nil {
			return err
		}
		defer watch.close()
	}
	rng := rand.New(rand.NewPCG(uint64(start.UnixNano()), 7))
	for i := 0; time.Since(start) < window; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.srv.Died() {
			return fmt.Errorf("the %s kcp died", s.variant)
		}
		cluster := s.clusters[rng.IntN(len(s.clusters))]
		name := fmt.Sprintf("%s%04d", hammer.DefaultOptions().Prefix, rng.IntN(perCluster))
		var d time.Duration
		switch kind {
		case WildcardPartialList:
			d, err = s.timedGet(ctx, "/clusters/*/apis/rbac.authorization.k8s.io/v1/clusterroles?resourceVersion=0", partialmeta.ListAccept(partialmeta.V1))
		case SingleClusterList:
			d, err = s.timedGet(ctx, "/clusters/"+cluster+"/apis/rbac.authorization.k8s.io/v1/clusterroles", "application/json")
		case SingleGet:
			d, err = s.timedGet(ctx, "/clusters/"+cluster+"/apis/rbac.authorization.k8s.io/v1/clusterroles/"+name, "application/json")
		case WatchDelay:
			d, err = watch.delay(ctx, s, fmt.Sprintf("%s%04d", hammer.DefaultOptions().Prefix, i%perCluster), start.UnixNano()+int64(i))
		}
		if err != nil {
			into.Failed++
			if into.Failed > 20 {
				return fmt.Errorf("more than 20 failures, the last: %w", err)
			}
			continue
		}
		into.Requests++
		into.Samples = append(into.Samples, d)
	}
	into.Elapsed += time.Since(start)
	after, err := server.ReadUsage(s.srv.PID())
	if err != nil {
		return err
	}
	into.CPU += after.CPU - before.CPU
	return nil
}

// timedGet GETs path and reads the whole body.
func (s *costSlot) timedGet(ctx context.Context, path, accept string) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.host+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", accept)
	began := time.Now()
	resp, err := s.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	d := time.Since(began)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK || n == 0 {
		return 0, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return d, nil
}

// eventStream is a single-cluster watch of root's ClusterRoles.
type eventStream struct {
	resp   *http.Response
	events chan watchEvent
}

type watchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Metadata struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	} `json:"object"`
}

// watchLabel is the label the watch delay's PATCHes set.
const watchLabel = "measure.kcp-carry.io/stamp"

// openWatch watches the first logical cluster's ClusterRoles from now on.
func (s *costSlot) openWatch(ctx context.Context) (*eventStream, error) {
	path := "/clusters/" + s.clusters[0] + "/apis/rbac.authorization.k8s.io/v1/clusterroles?watch=true&allowWatchBookmarks=false"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.host+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("watch: %s", resp.Status)
	}
	w := &eventStream{resp: resp, events: make(chan watchEvent, 64)}
	go func() {
		defer close(w.events)
		dec := json.NewDecoder(bufio.NewReader(resp.Body))
		for {
			var ev watchEvent
			if err := dec.Decode(&ev); err != nil {
				return
			}
			w.events <- ev
		}
	}()
	return w, nil
}

func (w *eventStream) close() {
	w.resp.Body.Close()
	for range w.events {
	}
}

// delay PATCHes a label of the first cluster's ClusterRole name to stamp
// and returns the time from the PATCH's answer to the watch's event with it.
func (w *eventStream) delay(ctx context.Context, s *costSlot, name string, stamp int64) (time.Duration, error) {
	value := fmt.Sprint(stamp)
	body := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, watchLabel, value)
	path := "/clusters/" + s.clusters[0] + "/apis/rbac.authorization.k8s.io/v1/clusterroles/" + name
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, s.host+path, bytes.NewBufferString(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/merge-patch+json")
	resp, err := s.hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	answered := time.Now()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("PATCH %s: %s", path, resp.Status)
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.events:
			if !ok {
				return 0, errors.New("the watch ended")
			}
			if ev.Object.Metadata.Name == name && ev.Object.Metadata.Labels[watchLabel] == value {
				return time.Since(answered), nil
			}
		case <-timeout:
			return 0, fmt.Errorf("no event for %s=%s within 30 s", name, value)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// WatchCacheOffTable is the costs as a markdown table: a row per size and
// request kind, the stock kcp without its watch cache against the carried
// kcp with it (p50 and p99 latency, one sequential client's rate, kcp's
// CPU per request), then a row per size of each kcp's RSS.
func WatchCacheOffTable(costs []WatchCacheOffCost) string {
	var b strings.Builder
	b.WriteString("| objects | request | p50 off / on | p99 off / on | rate off / on (1 client) | kcp CPU per request off / on |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|\n")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	for _, c := range costs {
		for _, kind := range costKinds {
			off, on := c.Kinds[StockNoCache][kind], c.Kinds[CarriedCache][kind]
			if off == nil || on == nil {
				continue
			}
			fmt.Fprintf(&b, "| %d | %s | %s / %s | %s / %s | %.1f / %.1f /s | %s / %s |\n", c.Objects, kind,
				ms(off.P50), ms(on.P50), ms(off.P99), ms(on.P99), off.PerSecond(), on.PerSecond(), ms(off.CPUPerRequest()), ms(on.CPUPerRequest()))
		}
		fmt.Fprintf(&b, "| %d | kcp RSS seeded, peak | %d / %d MiB | %d / %d MiB | | |\n", c.Objects,
			c.RSSAfterSeedMiB[StockNoCache], c.RSSAfterSeedMiB[CarriedCache], c.PeakRSSMiB[StockNoCache], c.PeakRSSMiB[CarriedCache])
	}
	return b.String()
}
