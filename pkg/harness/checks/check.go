// Package checks judges what a hammer run observed (pkg/harness/hammer
// records it in Observations): one file per check, each a Check registered
// in New. The hammer calls them once the load and the after-load reads are
// done, and feeds those that judge the load's partial-metadata items
// (PartialObserver) while it runs.
package checks

import "sync"

// OriginalAPIVersionAnnotation is what kcp's fork writes on wildcard partial
// items: the annotation every check judges.
const OriginalAPIVersionAnnotation = "kcp.io/original-api-version"

// Check is one correctness check of the hammer. Each lives in its own file
// and is registered in New; the report, the verdict and the text report go
// through this interface and the Result it returns.
type Check interface {
	// Info names the check.
	Info() Info
	// Result judges what the run observed. It is called once, after the
	// load and the after-load reads, and sets at least Enabled, Ran,
	// Checked, Violations, and Note when the check did not run or saw
	// nothing.
	Result(obs *Observations) Result
}

// PartialObserver is a check fed, while the load runs, every partial-metadata
// item the listers and watchers receive. It is called concurrently.
type PartialObserver interface {
	ObservePartial(seen Partial)
}

// Info names a check.
type Info struct {
	// ID is the check's letter in reports and messages ("a").
	ID string
	// Name says what holds when the check passes ("original-api-version").
	Name string
	// What is one sentence on what it checks, for --help.
	What string
}

// Names of the checks, for hammer's Report.Result.
const (
	APIVersion    = "original-api-version"
	Pollution     = "no pollution"
	LostWrites    = "nothing lost"
	MixedWatchers = "mixed watchers"
)

// New returns a fresh instance of every check, in report order. A new check
// is one file with its type and one line here.
func New() []Check {
	return []Check{
		&apiVersionCheck{},
		pollutionCheck{},
		lostWritesCheck{},
		&mixedWatchCheck{},
	}
}

// List describes the checks in report order.
func List() []Info {
	var out []Info
	for _, c := range New() {
		out = append(out, c.Info())
	}
	return out
}

// Result is the outcome of one check.
type Result struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Enabled: the run's options ask for the check (its workers run, it is
	// not skipped). Ran: it did run; false when it was not enabled or could
	// not run (the server died, the run ended early), and Note says why. A
	// run is clean only when every enabled check ran and checked at least
	// one item.
	Enabled    bool     `json:"enabled"`
	Ran        bool     `json:"ran"`
	Note       string   `json:"note,omitempty"`
	Checked    int64    `json:"checked"`
	Violations int64    `json:"violations"`
	Samples    []string `json:"samples,omitempty"`
	// Values counts what was seen: shown value → items.
	Values map[string]int64 `json:"values,omitempty"`
	// Sources breaks a check down by where the objects were read.
	Sources []SourceResult `json:"sources,omitempty"`
	// Uncertain counts items that matched only an operation of unknown
	// outcome; Unverified counts items that could not be judged.
	Uncertain  int64 `json:"uncertain,omitempty"`
	Unverified int64 `json:"unverified,omitempty"`
}

// Violated reports a check that ran and found violations.
func (c Result) Violated() bool { return c.Ran && c.Violations > 0 }

// Title is how reports name the check: "a: original-api-version".
func (c Result) Title() string { return c.ID + ": " + c.Name }

// tally is the accumulator of a check fed item by item: counts by shown
// value and the first samples of what was wrong.
type tally struct {
	mu      sync.Mutex
	checked int64
	bad     int64
	values  map[string]int64
	samples []string
}

// add records one item shown as value; sample (called only when the item is
// wrong and samples are still wanted) describes it.
func (t *tally) add(value string, ok bool, sample func() string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.values == nil {
		t.values = map[string]int64{}
	}
	t.checked++
	t.values[value]++
	if ok {
		return
	}
	t.bad++
	if len(t.samples) < maxSamples {
		t.samples = append(t.samples, sample())
	}
}

// observed is the Result of a check fed by the load's items: not enabled
// when off says why, not run when the load did not run, and a note
// (nothingSeen) when it ran and was fed nothing.
func (t *tally) observed(obs *Observations, off, nothingSeen string) Result {
	if off != "" {
		return Result{Note: off}
	}
	r := t.result()
	r.Enabled = true
	switch {
	case !obs.Loaded:
		r.Ran, r.Note = false, "the load did not run"
	case r.Checked == 0:
		r.Note = nothingSeen
	}
	return r
}

// result is the tally as a Result that ran.
func (t *tally) result() Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := Result{
		Ran:        true,
		Checked:    t.checked,
		Violations: t.bad,
		Samples:    append([]string(nil), t.samples...),
		Values:     make(map[string]int64, len(t.values)),
	}
	for k, v := range t.values {
		r.Values[k] = v
	}
	return r
}

const maxSamples = 8
