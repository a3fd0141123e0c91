package measure

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/internal/testreport"
	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
	"github.com/kcp-carry/kcp-carry/pkg/evidence/report/chart"
)

// TestRunEndToEnd runs the whole duel against real test shards with a very
// short load and writes the report: every measurement is there, the patched
// shard survives everything, the numbers add up, the files read back, and
// no shard is left running. Whether the pristine shard dies in a 4 s duel
// is up to chance; the live suite asserts that it does.
func TestRunEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts live test shards")
	}
	root := testfs.RepoRoot(t)
	o := DefaultOptions()
	o.Root = root
	o.Duration, o.MaxRequests = 4*time.Second, 50000
	o.StepDuration, o.StepMaxRequests = time.Second, 10000
	o.Rounds, o.Steps = 2, []int{1, 2}
	o.Clusters, o.Objects = []string{"evidence-e2e"}, 10
	o.Note = "A test run."
	o.Logf = t.Logf

	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if left := children(t, "testshard"); len(left) > 0 {
		t.Errorf("test shards still running after Run: %v", left)
	}

	d := rep.Duel
	if p := d.Patched; p.Died || p.Lists == 0 || p.Server5xx > 0 || p.Verdict != "clean" {
		t.Errorf("duel, patched: %+v; want alive, clean, with lists", p)
	}
	if n := len(d.Patched.Timeline); n < 4 {
		t.Errorf("duel, patched: %d seconds of timeline for a 4 s load", n)
	}
	// A pristine shard may die before its first LIST returns (seen: 12
	// requests, 190µs into the load), so lists are asked of a survivor only.
	switch p := d.Pristine; {
	case len(p.Timeline) == 0:
		t.Errorf("duel, pristine: %+v; want a timeline", p)
	case p.Died:
		if p.Fatal == nil || p.Fatal.Signature == "" || p.TimeToDeath <= 0 {
			t.Errorf("duel, pristine died without a time or signature: %+v", p)
		} else {
			t.Logf("the pristine shard died %s into the duel (%d LISTs): %s", p.TimeToDeath, p.Lists, p.Fatal.Markdown())
		}
	case p.Lists == 0:
		t.Errorf("duel, pristine: %+v; alive, want lists", p)
	}
	if s := rep.SingleLister; len(s.Rounds) != 2 || s.Ratio() <= 0 {
		t.Errorf("single lister: %+v", s)
	} else if pristine, patched := s.Totals(); pristine.Deaths > 0 || patched.Deaths > 0 {
		t.Errorf("single lister: %+v", s)
	}
	if n := len(rep.Scaling.Steps); n != 2 {
		t.Fatalf("%d scaling steps, want 2", n)
	}
	for _, st := range rep.Scaling.Steps {
		if st.Patched.Died || st.Patched.Lists == 0 {
			t.Errorf("%d listers, patched: %+v", st.Listers, st.Patched)
		}
		if len(st.Patched.Timeline) > 0 {
			t.Errorf("%d listers: a scaling run keeps its timeline", st.Listers)
		}
	}
	if rep.Setup.Note != "A test run." || rep.Setup.CPUs == 0 || len(rep.Setup.Shards) != 2 {
		t.Errorf("setup: %+v", rep.Setup)
	}

	dir := filepath.Join(t.TempDir(), "evidence")
	if err := Write(dir, rep); err != nil {
		t.Fatal(err)
	}
	back, err := report.Read(filepath.Join(dir, report.DuelFile))
	if err != nil {
		t.Fatal(err)
	}
	if back.Duel.Patched.Lists != d.Patched.Lists {
		t.Errorf("duel.json: %d patched lists, the report %d", back.Duel.Patched.Lists, d.Patched.Lists)
	}
	svg, err := os.ReadFile(filepath.Join(dir, report.ChartFile))
	if err != nil {
		t.Fatal(err)
	}
	paths, _ := testreport.ParseSVG(t, svg)
	for _, c := range []string{testreport.Hex(chart.PristineColor), testreport.Hex(chart.PatchedColor)} {
		if len(testreport.Longest(paths, c).Xs) < 3 {
			t.Errorf("the chart has no series line in %s", c)
		}
	}
}

// children are the pids of this process's children whose command name
// starts with name.
func children(t *testing.T, name string) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		t.Skipf("no /proc: %v", err)
	}
	me := strconv.Itoa(os.Getpid())
	var out []int
	for _, st := range stats {
		data, err := os.ReadFile(st)
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid ...
		s := string(data)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) > 1 && f[1] == me && strings.HasPrefix(s[open+1:close], name) {
			pid, _ := strconv.Atoi(strings.Fields(s)[0])
			out = append(out, pid)
		}
	}
	return out
}
