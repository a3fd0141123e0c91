package hammer

import "sync"

// Check is one correctness check of the hammer. Each lives in its own file
// (check_*.go) and is registered in newChecks; the report, the verdict and the
// text report go through this interface and the CheckResult it returns.
type Check interface {
	// Info names the check.
	Info() CheckInfo
	// Result judges what the run observed. It is called once, after the
	// load and the after-load reads, and sets at least Enabled, Ran,
	// Checked, Violations, and Note when the check did not run or saw
	// nothing.
	Result(obs *observations) CheckResult
}

// partialObserver is a check fed, while the load runs, every partial-metadata
// object the listers and watchers receive. It is called concurrently.
type partialObserver interface {
	observePartial(seen seenPartial)
}

// CheckInfo names a check.
type CheckInfo struct {
	// ID is the check's letter in reports and messages ("a").
	ID string
	// Name says what holds when the check passes ("original-api-version").
	Name string
	// What is one sentence on what it checks, for --help.
	What string
}

// Names of the checks, for Report.Result.
const (
	CheckAPIVersion    = "original-api-version"
	CheckPollution     = "no pollution"
	CheckLostWrites    = "nothing lost"
	CheckMixedWatchers = "mixed watchers"
)

// newChecks returns a fresh instance of every check, in report order. A new
// check is one file with its type and one line here.
func newChecks() []Check {
	return []Check{
		newAPIVersionCheck(),
		pollutionCheck{},
		lostWritesCheck{},
		newMixedWatchCheck(),
	}
}

// Checks describes the hammer's checks in report order.
func Checks() []CheckInfo {
	var out []CheckInfo
	for _, c := range newChecks() {
		out = append(out, c.Info())
	}
	return out
}

// CheckResult is the outcome of one check.
type CheckResult struct {
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
func (c CheckResult) Violated() bool { return c.Ran && c.Violations > 0 }

// Title is how reports name the check: "a: original-api-version".
func (c CheckResult) Title() string { return c.ID + ": " + c.Name }

// Worker kinds that receive partial-metadata objects.
type workerKind int

const (
	listerWorker       workerKind = iota // a lister, or the sequential probe
	watcherWorker                        // a wildcard (or, in cluster scope, single-cluster) watcher
	mixedWatcherWorker                   // a watch of a mixed-watcher group
)

// seenPartial is one partial-metadata object a worker of the load received.
type seenPartial struct {
	op      string // the operation, e.g. `list v1 rv=""`
	worker  workerKind
	res     Resource
	cluster string // "*" for a wildcard request
	meta    partialMeta
}

// observations are what a run saw, the input of every check's Result.
type observations struct {
	opts  *Options
	probe bool // a sequential probe instead of the load
	died  bool
	// loaded: the load (or probe) ran; false when the run stopped before it.
	loaded bool
	// readBack is what the after-load reads saw; nil when they did not run,
	// and readBackSkipped then says why.
	readBack        *readBack
	readBackSkipped string
	// ledger holds the writers' writes.
	ledger *ledger
}

// noReadBack is why the after-load reads, which checks (b) and (c) judge,
// have nothing to show: the server died, or they did not run; "" when they
// ran.
func (o *observations) noReadBack() string {
	switch {
	case o.died:
		return "the server died"
	case o.readBack == nil && o.readBackSkipped != "":
		return o.readBackSkipped
	case o.readBack == nil:
		return "the after-load reads did not run"
	}
	return ""
}

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

// result is the tally as a CheckResult that ran.
func (t *tally) result() CheckResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := CheckResult{
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
