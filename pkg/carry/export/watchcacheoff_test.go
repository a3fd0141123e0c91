package export

import (
	"slices"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

// The committed watch-cache-off-run.json reads, and the comment for
// kcp-dev/kcp#4551 quotes the mitigation's figures only from it: while it
// is empty, the mitigation and its checks and no figure; with the survival
// alone, that and its load; with the cost, the table and a command per
// column (testdata/watch-cache-off-run.json, figures made up for this test
// only). Each form passes the review's comment checks. A part with only some
// figures, or an unknown field, is refused naming what is wrong.
func TestWatchCacheOffRun(t *testing.T) {
	comment := func(run *WatchCacheOffRun) string {
		t.Helper()
		text, err := render("issue-4551-comment.md.tmpl", prData{BaseRev: "e006560fc76a", ForkPR: 77, WatchCacheOff: run})
		if err != nil {
			t.Fatal(err)
		}
		complains(t, "the comment", slices.Concat(commentProblems(string(text)), kcpTextLengthProblems(string(text))))
		return string(text)
	}
	noFigures := func(what, text string, figures ...string) {
		t.Helper()
		for _, f := range figures {
			if strings.Contains(text, f) {
				t.Errorf("%s: the comment quotes %q:\n%s", what, f, text)
			}
		}
	}

	committed, err := loadWatchCacheOffRun()
	if err != nil {
		t.Fatal(err)
	}
	text := comment(committed)
	testfs.ContainsAll(t, "the comment", text,
		"with kcp's Helm chart (`kcp/kcp`), with `kcp: {extraFlags: [\"--watch-cache=false\"]}` in your values; in a sharded kcp, every shard, since each has its own watch cache",
		"Drop the flag once your kcp has the fix (kcp-dev/kubernetes#77): a kcp whose go.mod pins `github.com/kcp-dev/kubernetes` past e006560fc76a.",
	)
	if committed == nil {
		noFigures(WatchCacheOffFile+" empty", text, "Measured", "costs", "|---", "# the load", "# GET")
	} else if !committed.HasCost() {
		noFigures(WatchCacheOffFile+" without the cost", text, "costs", "|---", "# GET")
	}

	run, err := parseWatchCacheOffRun([]byte(testfs.Read(t, "testdata/"+WatchCacheOffFile)))
	if err != nil {
		t.Fatal(err)
	}
	text = comment(run)
	testfs.ContainsAll(t, "the comment with the figures", text,
		"\n\nMeasured on kcp v9.9.9 (test figures, not measured) (a test machine): with the flag, 8 test listers and 4 test writers for 7 s: kcp up. "+
			"Below, its cost in kcp: each cell with the watch cache (the test's cached kcp) → with the flag. "+
			"A Go harness sent those requests; the lines below send the same kinds on your kcp, in the check's shell "+
			"(kcp's CPU per LIST: its change over a loop, divided by 100):\n\n```sh\n",
		"\nsleep 7; kill $(jobs -p)   # the load\n",
		"\ngrep VmHWM /proc/$(pgrep -x kcp)/status   # kcp peak RSS\n```\n\n"+
			"| objects | wildcard partial LIST p50 / p99 | single-cluster LIST p50 / p99 | GET p50 | watch event delay p50 | kcp CPU per wildcard LIST | kcp CPU per single-cluster LIST | kcp peak RSS |\n|---|---|---|---|---|---|---|---|\n"+
			"| 11 test objects | 1 ms / 2 ms → 11 ms / 12 ms | 3 ms / 4 ms → 13 ms / 14 ms | 5 ms → 15 ms | 6 ms → 16 ms | 7 CPU-s → 17 CPU-s | 9 ms → 19 ms | 8 MiB → 18 MiB |\n"+
			"| 22 test objects | 21 ms / 22 ms → 31 ms / 32 ms | 23 ms / 24 ms → 33 ms / 34 ms | 25 ms → 35 ms | 26 ms → 36 ms | 27 CPU-s → 37 CPU-s | 29 ms → 39 ms | 28 MiB → 38 MiB |\n",
	)

	survival := *run
	survival.Cost = WatchCacheOffCost{}
	text = comment(&survival)
	testfs.ContainsAll(t, "the comment with the survival alone", text, "with the flag, 8 test listers and 4 test writers for 7 s: kcp up. A Go harness sent those requests; the lines below send the same kinds on your kcp, in the check's shell:\n", "   # the load\n```\n")
	noFigures("the survival alone", text, "costs", "|---", "# GET")

	for _, c := range []struct{ json, want string }{
		{`{"kcp": "k"}`, "not survival or cost, machine"},
		{`{"survival": {"load": "8 listers"}}`, "not survival.duration, survival.result, survival.command, kcp, machine"},
		{`{"kcp": "k", "machine": "m", "cost": {"cacheKCP": "c"}}`, "not cost.commands.wildcardList, cost.commands.clusterList, cost.commands.get, cost.commands.watchDelay, cost.commands.cpu, cost.commands.peakRSS, cost.rows"},
		{`{"kcp": "k", "machine": "m", "cost": {"cacheKCP": "c", "rows": [{"objects": "1,000", "cache": {"getP50": "1 ms"}}], "commands": {"wildcardList": "a", "clusterList": "b", "get": "c", "watchDelay": "d", "cpu": "e", "peakRSS": "f"}}}`,
			"not cost.rows[0].cache.wildcardListP50, cost.rows[0].cache.wildcardListP99, cost.rows[0].cache.clusterListP50"},
		{`{"kcp": "k", "cpus": 4}`, `unknown field "cpus"`},
	} {
		if _, err := parseWatchCacheOffRun([]byte(c.json)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.json, err, c.want)
		}
	}
}
