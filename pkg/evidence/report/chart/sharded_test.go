package chart

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/internal/testreport"
	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
)

func TestShardedChart(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSharded(&b, testreport.StockSharded()); err != nil {
		t.Fatal(err)
	}
	paths, texts := testreport.ParseSVG(t, b.Bytes())
	strokes := map[string]int{}
	for _, p := range paths {
		strokes[p.Stroke]++
	}
	for _, c := range []string{testreport.Hex(PatchedColor), testreport.Hex(PristineColor)} {
		if strokes[c] == 0 {
			t.Errorf("no line in %s (strokes %v)", c, strokes)
		}
	}
	testfs.ContainsAll(t, "the legend", strings.Join(texts, "\n"), "shard root: not loaded, alive", "shard shard-1: loaded, died 3.0 s into its load (concurrent map writes)")
	if err := WriteSharded(&b, &report.Sharded{}); err == nil {
		t.Error("a run without probes charted without error")
	}
}

func TestAnswerRate(t *testing.T) {
	var ys []float64
	for _, p := range answerRate(testreport.StockSharded().Stock.Probes, 1) {
		ys = append(ys, p.Y)
	}
	if diff := cmp.Diff([]float64{100, 100, 0, 0, 0}, ys); diff != "" {
		t.Errorf("shard 1's answer rate (-want +got):\n%s", diff)
	}
}
