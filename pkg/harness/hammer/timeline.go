package hammer

import (
	"sort"
	"strings"
	"time"
)

// Timeline is the load's throughput second by second, for charting: bucket
// i counts the requests that ended in [i s, i+1 s) after the load started.
// A request counts once, when it ends (a page of a paged LIST is a request;
// a watch ends when its window closes).
type Timeline struct {
	// Buckets cover the load from its start to its end without gaps (an idle
	// second is a bucket of zeros); the last may be shorter than a second.
	Buckets []Bucket `json:"buckets"`
}

// Bucket is one second of the load.
type Bucket struct {
	// Second is where the bucket starts, in whole seconds after the load started.
	Second int `json:"second"`
	// Span is how much of the second the load covered: a second, except for
	// the last bucket, which ends with the load.
	Span time.Duration `json:"spanNanos"`
	// Lists is the number of successful LIST requests of every kind.
	Lists int64 `json:"lists"`
	// ListsByOp splits Lists by operation, e.g. "list v1 rv=0".
	ListsByOp map[string]int64 `json:"listsByOp,omitempty"`
	// Errors is the number of failed requests of every load operation
	// (lists, watches, writes).
	Errors int64 `json:"errors"`
	// ErrorsByOp splits Errors by operation.
	ErrorsByOp map[string]int64 `json:"errorsByOp,omitempty"`
}

// ListsPerSecond is Lists over Span (0 for an empty span).
func (b Bucket) ListsPerSecond() float64 {
	if b.Span <= 0 {
		return 0
	}
	return float64(b.Lists) / b.Span.Seconds()
}

// Lists is the number of successful LIST requests of the whole timeline.
func (t *Timeline) Lists() int64 { return t.total(func(b Bucket) int64 { return b.Lists }) }

// Errors is the number of failed requests of the whole timeline.
func (t *Timeline) Errors() int64 { return t.total(func(b Bucket) int64 { return b.Errors }) }

// total sums one count over the buckets of a timeline (0 for none).
func (t *Timeline) total(count func(Bucket) int64) int64 {
	if t == nil {
		return 0
	}
	var n int64
	for _, b := range t.Buckets {
		n += count(b)
	}
	return n
}

// timeline counts outcomes per second from start; not safe for concurrent
// use (the recorder's mutex guards it).
type timeline struct {
	start    time.Time
	prefixes []string // operations it counts
	secs     []second
}

type second struct {
	lists, errors map[string]int64
}

func newTimeline(start time.Time, prefixes ...string) *timeline {
	return &timeline{start: start, prefixes: prefixes}
}

// add counts a request of op that ended at end with class.
func (t *timeline) add(op string, end time.Time, class ErrorClass) {
	if !hasAnyPrefix(op, t.prefixes) {
		return
	}
	isList := strings.HasPrefix(op, "list ")
	if class == ClassOK && !isList {
		return
	}
	i := 0
	if d := end.Sub(t.start); d > 0 {
		i = int(d / time.Second)
	}
	for len(t.secs) <= i {
		t.secs = append(t.secs, second{})
	}
	s := &t.secs[i]
	if class == ClassOK {
		if s.lists == nil {
			s.lists = map[string]int64{}
		}
		s.lists[op]++
		return
	}
	if s.errors == nil {
		s.errors = map[string]int64{}
	}
	s.errors[op]++
}

// report returns the buckets of a load that ran for elapsed. A request that
// ended after elapsed (which the load's clock should not allow) is filed in
// the last bucket.
func (t *timeline) report(elapsed time.Duration) *Timeline {
	n := int((elapsed + time.Second - 1) / time.Second)
	if n == 0 && len(t.secs) > 0 {
		n = 1
	}
	out := &Timeline{Buckets: make([]Bucket, n)}
	for i := range out.Buckets {
		b := &out.Buckets[i]
		b.Second = i
		b.Span = min(time.Second, elapsed-time.Duration(i)*time.Second)
		if b.Span < 0 {
			b.Span = 0
		}
	}
	for i, s := range t.secs {
		b := &out.Buckets[min(i, n-1)]
		for op, c := range s.lists {
			if b.ListsByOp == nil {
				b.ListsByOp = map[string]int64{}
			}
			b.ListsByOp[op] += c
			b.Lists += c
		}
		for op, c := range s.errors {
			if b.ErrorsByOp == nil {
				b.ErrorsByOp = map[string]int64{}
			}
			b.ErrorsByOp[op] += c
			b.Errors += c
		}
	}
	return out
}

// ListOps are the list operations that appear in the timeline, sorted.
func (t *Timeline) ListOps() []string {
	if t == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, b := range t.Buckets {
		for op := range b.ListsByOp {
			seen[op] = true
		}
	}
	out := make([]string, 0, len(seen))
	for op := range seen {
		out = append(out, op)
	}
	sort.Strings(out)
	return out
}
