package hammer

import (
	"math"
	"sort"
	"sync"
	"time"
)

// histogram is a log-linear latency histogram: 64 buckets per power of two
// between 1µs and ~18 min, so percentiles are within ~1.1% and memory is fixed.
type histogram struct {
	counts [bucketCount]int64
	total  int64
	max    time.Duration
}

const (
	subBuckets  = 64
	minLatency  = time.Microsecond
	octaves     = 30 // 1µs * 2^30 ≈ 17.9 min
	bucketCount = octaves*subBuckets + 1
)

func bucketOf(d time.Duration) int {
	if d <= minLatency {
		return 0
	}
	x := math.Log2(float64(d) / float64(minLatency))
	i := int(x*subBuckets) + 1
	if i >= bucketCount {
		return bucketCount - 1
	}
	return i
}

// bucketUpper is the upper bound of bucket i.
func bucketUpper(i int) time.Duration {
	if i == 0 {
		return minLatency
	}
	return time.Duration(float64(minLatency) * math.Exp2(float64(i)/subBuckets))
}

func (h *histogram) add(d time.Duration) {
	h.counts[bucketOf(d)]++
	h.total++
	if d > h.max {
		h.max = d
	}
}

// quantile returns the upper bound of the bucket holding quantile q (0 < q ≤ 1),
// capped by the largest observation.
func (h *histogram) quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.total)))
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			if u := bucketUpper(i); u < h.max {
				return u
			}
			return h.max
		}
	}
	return h.max
}

// ErrorClass is how a request ended.
type ErrorClass int

const (
	ClassOK        ErrorClass = iota
	ClassTransport            // no HTTP response: refused, reset, EOF, timeout
	Class5xx                  // the server answered 5xx
	Class4xx                  // the server answered 4xx other than 409
	ClassConflict             // the server answered 409 (optimistic concurrency or AlreadyExists)
	ClassProtocol             // a 2xx the hammer could not use (wrong kind, undecodable body)
)

func (c ErrorClass) String() string {
	switch c {
	case ClassOK:
		return "ok"
	case ClassTransport:
		return "transport"
	case Class5xx:
		return "5xx"
	case Class4xx:
		return "4xx"
	case ClassConflict:
		return "conflict"
	case ClassProtocol:
		return "protocol"
	}
	return "unknown"
}

// ErrorCounts counts failed requests by class.
type ErrorCounts struct {
	Transport int64 `json:"transport"`
	Server5xx int64 `json:"5xx"`
	Client4xx int64 `json:"4xx"`
	Conflict  int64 `json:"conflict"`
	Protocol  int64 `json:"protocol"`
}

// Total is the number of failed requests.
func (e ErrorCounts) Total() int64 {
	return e.Transport + e.Server5xx + e.Client4xx + e.Conflict + e.Protocol
}

func (e *ErrorCounts) add(c ErrorClass) {
	switch c {
	case ClassTransport:
		e.Transport++
	case Class5xx:
		e.Server5xx++
	case Class4xx:
		e.Client4xx++
	case ClassConflict:
		e.Conflict++
	case ClassProtocol:
		e.Protocol++
	}
}

func (e *ErrorCounts) merge(o ErrorCounts) {
	e.Transport += o.Transport
	e.Server5xx += o.Server5xx
	e.Client4xx += o.Client4xx
	e.Conflict += o.Conflict
	e.Protocol += o.Protocol
}

// OpStats is the report of one operation.
type OpStats struct {
	Name      string        `json:"name"`
	Count     int64         `json:"count"`
	OK        int64         `json:"ok"`
	Errors    ErrorCounts   `json:"errors"`
	P50       time.Duration `json:"p50Nanos"`
	P99       time.Duration `json:"p99Nanos"`
	Max       time.Duration `json:"maxNanos"`
	ReqPerSec float64       `json:"reqPerSec"`
	// FirstError is the first error seen, for the human reading the report.
	FirstError string `json:"firstError,omitempty"`
}

type opRecord struct {
	hist       histogram
	ok         int64
	errs       ErrorCounts
	firstError string
}

// recorder collects per-operation statistics; safe for concurrent use.
type recorder struct {
	mu    sync.Mutex
	ops   map[string]*opRecord
	total int64
	fails int64
	tl    *timeline // while the load runs
	clock func() time.Time
}

func newRecorder() *recorder { return &recorder{ops: map[string]*opRecord{}, clock: time.Now} }

// startTimeline starts counting the requests of operations with these
// prefixes per second from start.
func (r *recorder) startTimeline(start time.Time, prefixes ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tl = newTimeline(start, prefixes...)
}

// stopTimeline stops counting and returns the timeline of a load that ran
// for elapsed; nil if none was started.
func (r *recorder) stopTimeline(elapsed time.Duration) *Timeline {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tl == nil {
		return nil
	}
	out := r.tl.report(elapsed)
	r.tl = nil
	return out
}

func (r *recorder) observe(op string, d time.Duration, class ErrorClass, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.ops[op]
	if rec == nil {
		rec = &opRecord{}
		r.ops[op] = rec
	}
	rec.hist.add(d)
	r.total++
	if r.tl != nil {
		r.tl.add(op, r.clock(), class)
	}
	if class == ClassOK {
		rec.ok++
		return
	}
	r.fails++
	rec.errs.add(class)
	if rec.firstError == "" && err != nil {
		rec.firstError = err.Error()
	}
}

// counts returns the number of requests and failed requests so far.
func (r *recorder) counts() (total, failed int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total, r.fails
}

// snapshot returns the statistics of every operation whose name has prefix,
// sorted by name; rates are over elapsed.
func (r *recorder) snapshot(elapsed time.Duration, prefixes ...string) []OpStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []OpStats
	for name, rec := range r.ops {
		if !hasAnyPrefix(name, prefixes) {
			continue
		}
		s := OpStats{
			Name:       name,
			Count:      rec.hist.total,
			OK:         rec.ok,
			Errors:     rec.errs,
			P50:        rec.hist.quantile(0.50),
			P99:        rec.hist.quantile(0.99),
			Max:        rec.hist.max,
			FirstError: rec.firstError,
		}
		if elapsed > 0 {
			s.ReqPerSec = float64(s.Count) / elapsed.Seconds()
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	if len(prefixes) == 0 {
		return true
	}
	for _, p := range prefixes {
		if len(s) >= len(p) && s[:len(p)] == p {
			return true
		}
	}
	return false
}
