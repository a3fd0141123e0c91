package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Files of the sharded section.
const (
	ShardedFile      = "sharded.json"
	ShardedChartFile = "sharded-front-proxy.svg"
)

// Sharded is the sharded section's data (evidence/sharded.json).
type Sharded struct {
	Started time.Time     `json:"started"`
	Elapsed time.Duration `json:"elapsedNanos"`
	// Load is the seed load of each loaded shard.
	Load     Load       `json:"load"`
	Carried  ShardedRun `json:"carried"`
	Stock    ShardedRun `json:"stock"`
	Binaries []string   `json:"binaries"`
	LoadAvg  []string   `json:"loadAvg"` // before, after
}

// ShardedRun is one topology's run.
type ShardedRun struct {
	StartedIn time.Duration `json:"startedInNanos"`
	// Shards are by shard index; a shard without load has Loaded false.
	Shards []ShardedShard `json:"shards"`
	// Cache is the cache server under its wildcard partial-metadata load.
	Cache ShardedShard `json:"cache"`
	// Probes are the front-proxy's answers for each workspace.
	Probes []Probe `json:"probes"`
}

// ShardedShard is one server's outcome.
type ShardedShard struct {
	Name           string        `json:"name"`
	Loaded         bool          `json:"loaded"`
	Died           bool          `json:"died"`
	TimeToDeath    time.Duration `json:"timeToDeathNanos,omitempty"`
	Fatal          string        `json:"fatal,omitempty"`
	LoadElapsed    time.Duration `json:"loadElapsedNanos"`
	ListsPerSecond float64       `json:"listsPerSecond"`
	Server5xx      int64         `json:"server5xx"`
	// Checks are the hammer's checks that ran: id, name, checked, violations.
	Checks  []ShardedCheck `json:"checks,omitempty"`
	Verdict string         `json:"verdict"`
}

// ShardedCheck is one hammer check's result on a server.
type ShardedCheck struct {
	ID         string           `json:"id"`
	Name       string           `json:"name"`
	Checked    int64            `json:"checked"`
	Violations int64            `json:"violations"`
	Values     map[string]int64 `json:"values,omitempty"`
}

// Probe is what the front-proxy answered for one workspace, on Shard
// (by index) and logical cluster Cluster. The keys are the Go names, as
// sharded.json has always had them.
type Probe struct {
	Shard      int
	Cluster    string
	OK, Failed int
	// FirstFailure is the first failed answer (status and body, or the
	// transport error), at FirstFailureAt since the probes started;
	// LastFailure the last one.
	FirstFailure   string
	FirstFailureAt time.Duration
	LastFailure    string
	// LastStatus is the HTTP status of the last answer (0: none).
	LastStatus int
	// Seconds are the answers second by second since the probes started.
	Seconds []ProbeSecond
}

// ProbeSecond is one second of a workspace's probes.
type ProbeSecond struct {
	OK     int `json:"ok"`
	Failed int `json:"failed"`
}

// AnswerRate is the share of probes answered 200.
func (p Probe) AnswerRate() float64 {
	if p.OK+p.Failed == 0 {
		return 0
	}
	return float64(p.OK) / float64(p.OK+p.Failed)
}

// ReadSharded reads dir/sharded.json; nil without error when there is none.
func ReadSharded(dir string) (*Sharded, error) {
	data, err := os.ReadFile(filepath.Join(dir, ShardedFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s Sharded
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ShardedFile), err)
	}
	return &s, nil
}

// ShardedMarkdown is the README's sharded section.
func ShardedMarkdown(s *Sharded) string {
	var b strings.Builder
	b.WriteString("kcp v0.32.3's sharded servers (`kcp` ×2 shards, `cache-server`, `virtual-workspaces` ×2, `kcp-front-proxy`), each its own process on 127.0.0.1 (`pkg/harness/server`), built by `make sharded` with the carry and stock. " +
		"Workspaces are created through the front-proxy and placed on a shard; the seed load goes to each shard's own endpoint, a wildcard partial-metadata load (2 listers, a watcher, APIExports) to the cache server, and every workspace is probed through the front-proxy twice a second.\n\n")
	fmt.Fprintf(&b, "Load per loaded shard: %d listers, %d watchers, %d writers; carried: both shards at once for %s; stock: shard 1 only. Run %s, %s of wall time, load average %s.\n\n",
		len(s.Load.Listers), s.Load.Watchers, s.Load.Writers, s.Load.Bound, s.Started.UTC().Format("2006-01-02 15:04 MST"), Seconds(s.Elapsed), strings.Join(s.LoadAvg, " → "))
	b.WriteString("![The front-proxy's answers for each shard's workspaces during the stock run](" + ShardedChartFile + ")\n\n")
	b.WriteString("| server | stock: time to death | carried: LIST/s | carried: 5xx | carried: checks (violations of checked) | carried: verdict |\n|---|---|---|---|---|---|\n")
	for i := range s.Carried.Shards {
		c := s.Carried.Shards[i]
		stock := "not loaded, alive"
		if i < len(s.Stock.Shards) {
			st := s.Stock.Shards[i]
			switch {
			case st.Died && st.Loaded:
				stock = Seconds(st.TimeToDeath) + " (" + st.Fatal + ")"
			case st.Died:
				stock = "died unloaded"
			case st.Loaded:
				stock = "alive after " + Seconds(st.LoadElapsed)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %d | %s | %s |\n", c.Name, stock, c.ListsPerSecond, c.Server5xx, checksCell(c.Checks), c.Verdict)
	}
	cc := s.Carried.Cache
	fmt.Fprintf(&b, "| cache-server | %s (stock; %.0f LIST/s) | %.0f | %d | %s | %s |\n\n", aliveWord(s.Stock.Cache), s.Stock.Cache.ListsPerSecond, cc.ListsPerSecond, cc.Server5xx, checksCell(cc.Checks), cc.Verdict)
	b.WriteString("A check's values are what `kcp.io/original-api-version` said on the items it judged; `<missing>` is no key.\n\n")
	b.WriteString("The front-proxy's answers (200 of all probes) per workspace's logical cluster:\n\n| logical cluster | shard | carried | stock |\n|---|---|---|---|\n")
	for i, c := range s.Carried.Probes {
		stock := "-"
		if i < len(s.Stock.Probes) {
			st := s.Stock.Probes[i]
			stock = fmt.Sprintf("%d/%d", st.OK, st.OK+st.Failed)
			if st.LastFailure != "" {
				stock += "; then `" + truncate(st.LastFailure, 90) + "`"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %d/%d | %s |\n", c.Cluster, shardName(s.Carried, c.Shard), c.OK, c.OK+c.Failed, stock)
	}
	return b.String()
}

// checksCell is "a 12/74776 (<missing>×55441, \"apis.kcp.io/v1alpha2\"×19335), b 0/1632".
func checksCell(cs []ShardedCheck) string {
	var parts []string
	for _, c := range cs {
		part := fmt.Sprintf("%s %d/%d", c.ID, c.Violations, c.Checked)
		if len(c.Values) > 0 {
			var vs []string
			keys := slices.Collect(maps.Keys(c.Values))
			slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(c.Values[b], c.Values[a]), cmp.Compare(a, b)) })
			for _, v := range keys {
				vs = append(vs, fmt.Sprintf("`%s`×%d", v, c.Values[v]))
			}
			part += " (" + strings.Join(vs, ", ") + ")"
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// shardName is the name the run recorded for shard i.
func shardName(r ShardedRun, i int) string {
	if i >= 0 && i < len(r.Shards) {
		return r.Shards[i].Name
	}
	return fmt.Sprintf("shard %d", i)
}

func aliveWord(s ShardedShard) string {
	if s.Died {
		return "died"
	}
	return "alive"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
