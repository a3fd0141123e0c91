package measure

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/internal/testreport"
	"github.com/kcp-carry/kcp-carry/pkg/harness/report/chart"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/harness/shardedload"
)

// stockSharded is a stock run where shard 1 died 3 s into its load: its
// workspace answered 2 s, then failed; shard 0's answered throughout.
func stockSharded() *Sharded {
	sec := func(ok, failed int) shardedload.ProbeSecond { return shardedload.ProbeSecond{OK: ok, Failed: failed} }
	return &Sharded{
		Carried: ShardedRun{
			Shards: []ShardedShard{{Name: "shard root", Loaded: true, ListsPerSecond: 40, Verdict: "clean"}, {Name: "shard shard-1", Loaded: true, ListsPerSecond: 38, Verdict: "clean",
				Checks: []ShardedCheck{{ID: "a", Checked: 30, Values: map[string]int64{`<missing>`: 20, `"apis.kcp.io/v1alpha2"`: 10}}, {ID: "b", Checked: 300}}}},
			Cache:  ShardedShard{Name: "cache-server", Loaded: true, ListsPerSecond: 9, Verdict: "clean"},
			Probes: []shardedload.ProbeResult{{Workspace: server.Workspace{Shard: 0, Cluster: "root"}, OK: 8}, {Workspace: server.Workspace{Shard: 1, Cluster: "c1"}, OK: 8}},
		},
		Stock: ShardedRun{
			Shards: []ShardedShard{{Name: "shard root"}, {Name: "shard shard-1", Loaded: true, Died: true, TimeToDeath: 3 * time.Second, Fatal: "concurrent map writes"}},
			Cache:  ShardedShard{Name: "cache-server", Loaded: true, Verdict: "clean"},
			Probes: []shardedload.ProbeResult{
				{Workspace: server.Workspace{Shard: 0, Cluster: "root"}, OK: 8, Seconds: []shardedload.ProbeSecond{sec(2, 0), sec(2, 0), sec(2, 0), sec(2, 0)}},
				{Workspace: server.Workspace{Shard: 1, Cluster: "c2"}, OK: 4, Failed: 4, LastFailure: "502 Bad Gateway: connection refused",
					Seconds: []shardedload.ProbeSecond{sec(2, 0), sec(2, 0), sec(0, 2), sec(0, 2)}},
			},
		},
	}
}

func TestShardedChart(t *testing.T) {
	var b bytes.Buffer
	if err := WriteShardedChart(&b, stockSharded()); err != nil {
		t.Fatal(err)
	}
	paths, texts := testreport.ParseSVG(t, b.Bytes())
	strokes := map[string]int{}
	for _, p := range paths {
		strokes[p.Stroke]++
	}
	for _, c := range []string{testreport.Hex(chart.PatchedColor), testreport.Hex(chart.PristineColor)} {
		if strokes[c] == 0 {
			t.Errorf("no line in %s (strokes %v)", c, strokes)
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"shard root: not loaded, alive", "shard shard-1: loaded, died 3.0 s into its load (concurrent map writes)"} {
		if !strings.Contains(all, want) {
			t.Errorf("legend lacks %q:\n%s", want, all)
		}
	}
	if err := WriteShardedChart(&b, &Sharded{}); err == nil {
		t.Error("a run without probes charted without error")
	}
}

func TestAnswerRate(t *testing.T) {
	pts := answerRate(stockSharded().Stock.Probes, 1)
	var ys []float64
	for _, p := range pts {
		ys = append(ys, p.Y)
	}
	if want := []float64{100, 100, 0, 0, 0}; !equalFloats(ys, want) {
		t.Errorf("shard 1's answer rate %v, want %v", ys, want)
	}
}

func TestShardedMarkdown(t *testing.T) {
	md := ShardedMarkdown(stockSharded())
	for _, want := range []string{"| shard shard-1 | 3.0 s (concurrent map writes) | 38 | 0 | a 0/30 (`<missing>`×20, `\"apis.kcp.io/v1alpha2\"`×10); b 0/300 | clean |",
		"| shard root | not loaded, alive | 40 | 0 | - | clean |", "502 Bad Gateway", ShardedChartFile} {
		if !strings.Contains(md, want) {
			t.Errorf("the section lacks %q:\n%s", want, md)
		}
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
