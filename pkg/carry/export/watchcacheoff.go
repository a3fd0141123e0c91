package export

import (
	_ "embed"
	"fmt"
	"strings"
)

// WatchCacheOffFile holds the measured figures of the mitigation for
// kcp-dev/kcp#4551, stock kcp started with --watch-cache=false, which the
// comment for that issue (CommentFile) quotes: that it survives the load that
// crashes kcp with the watch cache, and what it costs against the watch
// cache. Each part, the survival and the cost, is written only once all its
// fields are set; while the file is empty the comment gives the mitigation
// and its checks and no figure. Every figure is one measured, never one
// estimated, and every command one a reader runs on their own kcp with kcp
// and kubectl (and curl, jq, grep): the comment names nothing of this
// repository.
const WatchCacheOffFile = "watch-cache-off-run.json"

//go:embed watch-cache-off-run.json
var watchCacheOffJSON []byte

// WatchCacheOffRun is the mitigation measured. Every value is a string as
// the comment shows it ("41 ms", "1.2 GiB", "60 s").
type WatchCacheOffRun struct {
	// KCP is the trees measured with --watch-cache=false, as a reader can
	// check them out ("kcp v0.32.3 and main at dac74f5955f1, stock");
	// Machine what they ran on ("2 cores, 24 GiB, shared with other
	// builds"). Both are required once a part is set.
	KCP     string `json:"kcp"`
	Machine string `json:"machine"`
	// Survival is the load that crashes kcp with the watch cache, run
	// against kcp with --watch-cache=false.
	Survival WatchCacheOffSurvival `json:"survival"`
	// Cost is the watch cache against --watch-cache=false.
	Cost WatchCacheOffCost `json:"cost"`
}

// WatchCacheOffSurvival is the survival proof: Load ("8 wildcard
// partial-metadata listers and 4 writers over 50 ClusterRoles"), Duration
// ("60 s"), Result ("kcp up, no fatal error, no object stored with the
// key"), and Command, the shell lines that run that load on the reader's kcp
// (newlines allowed; shown in a code block after the comment's check, whose
// shell has `kubectl proxy` on 127.0.0.1:8001 and ACCEPT set).
type WatchCacheOffSurvival struct {
	Load     string `json:"load"`
	Duration string `json:"duration"`
	Result   string `json:"result"`
	Command  string `json:"command"`
}

// WatchCacheOffCost is the cost table: CacheKCP is what the watch cache
// column ran, in kcp's words ("the same trees with the fork's fix, watch
// cache on": stock kcp with the cache crashes under the load), Rows one per
// object count, and Commands how each column is measured on the reader's
// kcp. The committed file has two rows with no figure, the table's skeleton
// (1,000 and 10,000 ClusterRoles): rows count only once a figure is set.
type WatchCacheOffCost struct {
	CacheKCP string                `json:"cacheKCP"`
	Rows     []WatchCacheOffRow    `json:"rows"`
	Commands WatchCacheOffCommands `json:"commands"`
}

// WatchCacheOffRow is one object count ("1,000 ClusterRoles over 10
// workspaces"; it may name the tree when the trees differ), with the
// figures with the watch cache and with --watch-cache=false.
type WatchCacheOffRow struct {
	Objects string               `json:"objects"`
	Cache   WatchCacheOffFigures `json:"cache"`
	NoCache WatchCacheOffFigures `json:"noCache"`
}

// WatchCacheOffFigures are one row's figures for one side: the latency of a
// wildcard partial-metadata LIST (/clusters/*/...) and of a single-cluster
// LIST, p50 and p99; a GET's p50; the p50 delay from a write's response to
// its watch event; kcp's CPU per wildcard partial-metadata LIST (CPU) and per
// single-cluster LIST (ClusterListCPU), "39 ms"; and its peak RSS (VmHWM).
type WatchCacheOffFigures struct {
	WildcardListP50 string `json:"wildcardListP50"`
	WildcardListP99 string `json:"wildcardListP99"`
	ClusterListP50  string `json:"clusterListP50"`
	ClusterListP99  string `json:"clusterListP99"`
	GetP50          string `json:"getP50"`
	WatchDelayP50   string `json:"watchDelayP50"`
	CPU             string `json:"cpu"`
	ClusterListCPU  string `json:"clusterListCPU"`
	PeakRSS         string `json:"peakRSS"`
}

// WatchCacheOffCommands reproduce each column on the reader's kcp, one
// shell line each, in the shell of the comment's check (kubectl proxy on
// 127.0.0.1:8001, ACCEPT the partial-metadata Accept header): curl loops
// with -w '%{time_total}' for the latencies, a kubectl write and watch for
// the event delay, /proc/<kcp's pid>/stat and status (VmHWM) for CPU and RSS.
// They are a reader's way to the same kinds of request, not what measured the
// figures (the comment says so).
type WatchCacheOffCommands struct {
	WildcardList string `json:"wildcardList"`
	ClusterList  string `json:"clusterList"`
	Get          string `json:"get"`
	WatchDelay   string `json:"watchDelay"`
	CPU          string `json:"cpu"`
	PeakRSS      string `json:"peakRSS"`
}

func loadWatchCacheOffRun() (*WatchCacheOffRun, error) {
	return loadFigures(WatchCacheOffFile, watchCacheOffJSON, parseWatchCacheOffRun)
}

// parseWatchCacheOffRun reads a WatchCacheOffFile: nil when every field is
// empty; an error naming what is missing when a part has only some of its
// fields, or kcp and machine are missing beside a part.
func parseWatchCacheOffRun(data []byte) (*WatchCacheOffRun, error) {
	var r WatchCacheOffRun
	if err := decodeStrict(data, &r); err != nil {
		return nil, err
	}
	s, c := r.Survival, r.Cost
	survival := []field{{"survival.load", s.Load}, {"survival.duration", s.Duration}, {"survival.result", s.Result}, {"survival.command", s.Command}}
	cost := append([]field{{"cost.cacheKCP", c.CacheKCP}}, c.Commands.fields()...)
	for i, row := range c.Rows {
		p := fmt.Sprintf("cost.rows[%d].", i)
		cost = append(cost, field{p + "objects", row.Objects})
		cost = append(cost, row.Cache.fields(p+"cache.")...)
		cost = append(cost, row.NoCache.fields(p+"noCache.")...)
	}
	// Rows with no figure yet are the table's skeleton, as committed.
	hasSurvival, hasCost := anySet(survival), anySet(cost)
	if !hasSurvival && !hasCost && r.KCP == "" && r.Machine == "" {
		return nil, nil
	}
	var missing []string
	if hasSurvival {
		missing = append(missing, unset(survival)...)
	}
	if hasCost {
		missing = append(missing, unset(cost)...)
		if len(c.Rows) == 0 {
			missing = append(missing, "cost.rows")
		}
	}
	if !hasSurvival && !hasCost {
		missing = append(missing, "survival or cost")
	}
	missing = append(missing, unset([]field{{"kcp", r.KCP}, {"machine", r.Machine}})...)
	if len(missing) > 0 {
		return nil, fmt.Errorf("some figures of --watch-cache=false are set, but not %s: give each part (survival, cost) whole, with kcp and machine, or leave it empty", strings.Join(missing, ", "))
	}
	return &r, nil
}

// HasSurvival and HasCost say which parts a parsed run has.
func (r *WatchCacheOffRun) HasSurvival() bool { return r.Survival.Load != "" }
func (r *WatchCacheOffRun) HasCost() bool     { return r.Cost.CacheKCP != "" }

func (c WatchCacheOffCommands) fields() []field {
	return []field{
		{"cost.commands.wildcardList", c.WildcardList}, {"cost.commands.clusterList", c.ClusterList}, {"cost.commands.get", c.Get},
		{"cost.commands.watchDelay", c.WatchDelay}, {"cost.commands.cpu", c.CPU}, {"cost.commands.peakRSS", c.PeakRSS},
	}
}

func (f WatchCacheOffFigures) fields(prefix string) []field {
	return []field{
		{prefix + "wildcardListP50", f.WildcardListP50}, {prefix + "wildcardListP99", f.WildcardListP99},
		{prefix + "clusterListP50", f.ClusterListP50}, {prefix + "clusterListP99", f.ClusterListP99},
		{prefix + "getP50", f.GetP50}, {prefix + "watchDelayP50", f.WatchDelayP50},
		{prefix + "cpu", f.CPU}, {prefix + "clusterListCPU", f.ClusterListCPU}, {prefix + "peakRSS", f.PeakRSS},
	}
}
