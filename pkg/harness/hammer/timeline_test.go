package hammer

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTimelineBuckets(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	tl := newTimeline(start, "list ", "watch ", "write ")

	tl.add("list v1 rv=0", at(0), ClassOK)                    // the first instant is second 0
	tl.add("list v1 rv=0", at(999*time.Millisecond), ClassOK) // still second 0
	tl.add("list v1 rv=0", at(time.Second), ClassOK)          // a boundary opens the next second
	tl.add(`list kcp-client rv=""`, at(1500*time.Millisecond), ClassOK)
	tl.add("list v1 rv=0", at(1600*time.Millisecond), Class5xx) // an error, not a list
	tl.add("write patch", at(1700*time.Millisecond), ClassOK)   // successful writes are not lists
	tl.add("write patch", at(1800*time.Millisecond), ClassConflict)
	tl.add("watch v1", at(1900*time.Millisecond), ClassTransport)
	tl.add("seed create", at(1950*time.Millisecond), ClassTransport) // not a load operation
	// Nothing in second 2: an idle second is a bucket of zeros.
	tl.add("list v1 rv=0", at(3200*time.Millisecond), ClassOK)
	tl.add("list v1 rv=0", at(-time.Millisecond), ClassOK)    // before the start: second 0
	tl.add("list v1 rv=0", at(5*time.Second), ClassTransport) // after the end: the last bucket

	got := tl.report(3500 * time.Millisecond)
	want := &Timeline{Buckets: []Bucket{
		{Second: 0, Span: time.Second, Lists: 3, ListsByOp: map[string]int64{"list v1 rv=0": 3}},
		{Second: 1, Span: time.Second, Lists: 2, ListsByOp: map[string]int64{"list v1 rv=0": 1, `list kcp-client rv=""`: 1},
			Errors: 3, ErrorsByOp: map[string]int64{"list v1 rv=0": 1, "write patch": 1, "watch v1": 1}},
		{Second: 2, Span: time.Second},
		{Second: 3, Span: 500 * time.Millisecond, Lists: 1, ListsByOp: map[string]int64{"list v1 rv=0": 1},
			Errors: 1, ErrorsByOp: map[string]int64{"list v1 rv=0": 1}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
	if got.Lists() != 6 || got.Errors() != 4 {
		t.Errorf("Lists() = %d, Errors() = %d; want 6, 4", got.Lists(), got.Errors())
	}
	if r := got.Buckets[3].ListsPerSecond(); r != 2 {
		t.Errorf("1 list in the last half second = %v/s, want 2", r)
	}
	if r := (Bucket{Lists: 3}).ListsPerSecond(); r != 0 {
		t.Errorf("empty span = %v/s, want 0", r)
	}
	if ops := got.ListOps(); !cmp.Equal(ops, []string{`list kcp-client rv=""`, "list v1 rv=0"}) {
		t.Errorf("ListOps() = %q", ops)
	}

	// Whole seconds make whole buckets; a load of no time has none.
	if got := newTimeline(start).report(2 * time.Second); len(got.Buckets) != 2 || got.Buckets[1].Span != time.Second {
		t.Errorf("2 s load: %+v", got.Buckets)
	}
	if got := newTimeline(start).report(0); len(got.Buckets) != 0 {
		t.Errorf("0 s load: %+v", got.Buckets)
	}
}

// TestRunTimeline: the timeline of a real run adds up to the load's
// operations, covers the load, and is in the JSON report.
func TestRunTimeline(t *testing.T) {
	f := newFakeServer(t, nil)
	o := smallOptions(f)
	o.MaxRequests = 1 << 40
	o.Duration = 2500 * time.Millisecond
	rep := mustRun(t, o)
	tl := rep.Timeline
	if tl == nil {
		t.Fatal("no timeline")
	}
	if n, want := len(tl.Buckets), int((rep.LoadElapsed+time.Second-1)/time.Second); n != want || n < 3 {
		t.Errorf("%d buckets for a %s load, want %d (at least 3)", n, rep.LoadElapsed, want)
	}
	var lists, failed int64
	byOp := map[string]int64{}
	for _, op := range rep.Ops {
		if strings.HasPrefix(op.Name, "list ") {
			lists += op.OK
			byOp[op.Name] = op.OK
		}
		failed += op.Count - op.OK
	}
	if lists == 0 || tl.Lists() != lists || tl.Errors() != failed {
		t.Errorf("timeline: %d lists, %d errors; the report's operations: %d lists, %d failed", tl.Lists(), tl.Errors(), lists, failed)
	}
	sum := map[string]int64{}
	for _, b := range tl.Buckets {
		for op, n := range b.ListsByOp {
			sum[op] += n
		}
	}
	if diff := cmp.Diff(byOp, sum); diff != "" {
		t.Errorf("lists by operation (-report +timeline):\n%s", diff)
	}
	for _, b := range tl.Buckets[:2] {
		if b.Lists == 0 {
			t.Errorf("second %d has no list", b.Second)
		}
	}

	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tl, back.Timeline); diff != "" {
		t.Errorf("timeline after a JSON round trip (-want +got):\n%s", diff)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "successful LISTs per second of the load: ") {
		t.Errorf("text report lacks the timeline:\n%s", text.String())
	}
}

// TestRecorderTimelineOnlyDuringLoad: requests before the timeline starts
// and after it stops are not in it.
func TestRecorderTimelineOnlyDuringLoad(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := newRecorder()
	r.clock = func() time.Time { return now }
	r.observe("list v1 rv=0", time.Millisecond, ClassOK, nil) // before
	r.startTimeline(now)
	r.observe("list v1 rv=0", time.Millisecond, ClassOK, nil)
	now = now.Add(1200 * time.Millisecond)
	r.observe("list v1 rv=0", time.Millisecond, ClassTransport, errors.New("refused"))
	tl := r.stopTimeline(1500 * time.Millisecond)
	r.observe("list v1 rv=0", time.Millisecond, ClassOK, nil) // after
	if len(tl.Buckets) != 2 || tl.Buckets[0].Lists != 1 || tl.Buckets[1].Errors != 1 || tl.Lists() != 1 {
		t.Errorf("timeline = %+v", tl.Buckets)
	}
	if r.stopTimeline(time.Second) != nil {
		t.Error("a stopped timeline stopped again is not nil")
	}
}
