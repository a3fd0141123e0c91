package hammer

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
)

// Exit codes of the hammer CLI, and Report.ExitCode.
const (
	ExitClean        = 0 // the server lived, every check held, no 5xx
	ExitFailure      = 1 // the hammer could not do its job (setup or seeding failed, or no check saw an item)
	ExitUsage        = 2 // bad flags or options
	ExitDied         = 3 // the server died
	ExitViolated     = 4 // a correctness check failed
	ExitServerErrors = 5 // the server lived and the checks held, but it answered 5xx
)

// Report is the outcome of one run.
type Report struct {
	Target    string   `json:"target"`
	Mode      string   `json:"mode"` // "load" or "probe"
	Scope     Scope    `json:"scope"`
	Resources []string `json:"resources"`
	Clusters  []string `json:"clusters"`
	Listers   []string `json:"listers,omitempty"` // variant of each lister
	Watchers  int      `json:"watchers"`
	// MixedWatchers is the number of mixed-watcher groups (check (d)).
	MixedWatchers int    `json:"mixedWatchers,omitempty"`
	Writers       int    `json:"writers"`
	WriteMode     string `json:"writeMode,omitempty"`
	Budget        int64  `json:"budget"`
	Bound         string `json:"bound"` // the load's duration bound

	Started time.Time     `json:"started"`
	Elapsed time.Duration `json:"elapsedNanos"` // whole run
	// LoadElapsed is how long the load (or the probe) ran.
	LoadElapsed time.Duration `json:"loadElapsedNanos"`
	// Requests and ReqPerSec are over the load's operations.
	Requests  int64   `json:"requests"`
	Failed    int64   `json:"failed"`
	ReqPerSec float64 `json:"reqPerSec"`
	// Ops are the load's operations; SetupOps are seeding, the after-load reads and cleanup.
	Ops      []OpStats `json:"ops"`
	SetupOps []OpStats `json:"setupOps"`
	// Timeline is the load's (or probe's) successful LISTs and errors second
	// by second; nil when the run never got to the load.
	Timeline *Timeline `json:"timeline,omitempty"`

	Seed             SeedResult `json:"seed"`
	PartialItems     int64      `json:"partialItems"`
	WatchEvents      int64      `json:"watchEvents"`
	SuccessfulWrites int64      `json:"successfulWrites"`

	Death Death `json:"death"`
	// TimeToDeath is from the start of the load (or probe) to Death.At.
	TimeToDeath time.Duration `json:"timeToDeathNanos,omitempty"`

	// Checks are the results of every check, in the order of checks.List().
	Checks []checks.Result `json:"checks"`

	Error    string `json:"error,omitempty"` // why the hammer could not do its job
	Verdict  string `json:"verdict"`
	ExitCode int    `json:"exitCode"`
}

// Server5xx is how many requests of the run (load and setup) got a 5xx.
func (r *Report) Server5xx() int64 {
	var n int64
	for _, o := range append(append([]OpStats(nil), r.Ops...), r.SetupOps...) {
		n += o.Errors.Server5xx
	}
	return n
}

// Result is the result of the check named name (checks.APIVersion, ...). A
// check missing from the report comes back as not run, with a note saying so.
func (r *Report) Result(name string) checks.Result {
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	return checks.Result{Name: name, Note: "not in the report"}
}

// Violations lists the checks that ran and failed.
func (r *Report) Violations() []checks.Result {
	var out []checks.Result
	for _, c := range r.Checks {
		if c.Violated() {
			out = append(out, c)
		}
	}
	return out
}

// checkedSomething tells whether at least one check was enabled and every
// enabled check ran and checked at least one item.
func (r *Report) checkedSomething() bool {
	enabled := false
	for _, c := range r.Checks {
		if !c.Enabled {
			continue
		}
		if !c.Ran || c.Checked == 0 {
			return false
		}
		enabled = true
	}
	return enabled
}

// finish sets Verdict and ExitCode.
func (r *Report) finish() {
	switch {
	case r.Death.Died:
		r.Verdict, r.ExitCode = "server died", ExitDied
	case len(r.Violations()) > 0:
		r.Verdict, r.ExitCode = "correctness violated", ExitViolated
	case r.Error != "":
		r.Verdict, r.ExitCode = "hammer failed", ExitFailure
	case r.Server5xx() > 0:
		r.Verdict, r.ExitCode = "server errors", ExitServerErrors
	case !r.checkedSomething():
		// A run whose checks saw nothing proves nothing: never "clean".
		r.Verdict, r.ExitCode = "nothing checked", ExitFailure
	default:
		r.Verdict, r.ExitCode = "clean", ExitClean
	}
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the human-readable summary.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "hammer %s against %s (%s scope)\n", r.Mode, r.Target, r.Scope)
	fmt.Fprintf(&b, "  resources: %s · logical clusters: %s\n", strings.Join(r.Resources, ", "), strings.Join(r.Clusters, ", "))
	fmt.Fprintf(&b, "  objects: %d (created %d, existed %d)", r.Seed.Objects, r.Seed.Created, r.Seed.Existed)
	if r.Seed.CacheSync > 0 {
		fmt.Fprintf(&b, " · watch cache showed them after %s", round(r.Seed.CacheSync))
	}
	if r.Seed.Deleted > 0 {
		fmt.Fprintf(&b, " · cleanup deleted %d", r.Seed.Deleted)
	}
	b.WriteString("\n")
	if r.Mode == "load" {
		fmt.Fprintf(&b, "  load: %d listers [%s], %d watchers, %d mixed-watcher groups, %d writers (%s); bound %s or %d requests\n",
			len(r.Listers), strings.Join(r.Listers, " "), r.Watchers, r.MixedWatchers, r.Writers, r.WriteMode, r.Bound, r.Budget)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tcount\tok\ttransport\t5xx\t4xx\tconflict\tprotocol\tp50\tp99\treq/s\t")
	for _, o := range r.Ops {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%.1f\t\n", o.Name, o.Count, o.OK,
			o.Errors.Transport, o.Errors.Server5xx, o.Errors.Client4xx, o.Errors.Conflict, o.Errors.Protocol, round(o.P50), round(o.P99), o.ReqPerSec)
	}
	tw.Flush()
	fmt.Fprintf(&b, "%s: %d requests (%d failed) in %s = %.0f req/s; %d partial items, %d watch events, %d successful writes\n",
		r.Mode, r.Requests, r.Failed, round(r.LoadElapsed), r.ReqPerSec, r.PartialItems, r.WatchEvents, r.SuccessfulWrites)
	writeTimeline(&b, r.Timeline)
	for _, o := range r.Ops {
		if o.FirstError != "" {
			fmt.Fprintf(&b, "  first error of %s: %s\n", o.Name, o.FirstError)
		}
	}
	b.WriteString("\n")
	if r.Death.Died {
		fmt.Fprintf(&b, "server: DIED %s into the %s (phase %s) after %d successful requests\n  evidence: %s\n",
			round(r.TimeToDeath), r.Mode, r.Death.Phase, r.Death.SuccessesBefore, r.Death.Evidence)
	} else {
		b.WriteString("server: alive\n")
	}
	for _, c := range r.Checks {
		writeCheck(&b, c)
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", r.Error)
	}
	fmt.Fprintf(&b, "verdict: %s (exit %d)\n", r.Verdict, r.ExitCode)
	_, err := io.WriteString(w, b.String())
	return err
}

// maxTimelineText bounds the seconds the text report lists.
const maxTimelineText = 120

// writeTimeline writes the successful LISTs (and failures, if any) of each
// second of the load on one line.
func writeTimeline(b *strings.Builder, t *Timeline) {
	if t == nil || len(t.Buckets) == 0 {
		return
	}
	var lists, errs []string
	for i, bk := range t.Buckets {
		if i == maxTimelineText {
			lists = append(lists, fmt.Sprintf("… (%d more)", len(t.Buckets)-i))
			break
		}
		lists = append(lists, fmt.Sprint(bk.Lists))
		errs = append(errs, fmt.Sprint(bk.Errors))
	}
	fmt.Fprintf(b, "  successful LISTs per second of the load: %s\n", strings.Join(lists, " "))
	if t.Errors() > 0 {
		fmt.Fprintf(b, "  failed requests per second of the load: %s\n", strings.Join(errs, " "))
	}
}

func writeCheck(b *strings.Builder, c checks.Result) {
	switch {
	case !c.Ran:
		fmt.Fprintf(b, "check %s: not run (%s)\n", c.Title(), c.Note)
		return
	case c.Violations > 0:
		fmt.Fprintf(b, "check %s: VIOLATED by %d of %d\n", c.Title(), c.Violations, c.Checked)
	case c.Checked == 0:
		fmt.Fprintf(b, "check %s: NOTHING checked (%s)\n", c.Title(), c.Note)
	default:
		fmt.Fprintf(b, "check %s: ok (%d checked)\n", c.Title(), c.Checked)
	}
	if len(c.Values) > 0 {
		var parts []string
		for _, k := range sortedValues(c.Values) {
			parts = append(parts, fmt.Sprintf("%s×%d", k, c.Values[k]))
		}
		fmt.Fprintf(b, "  values seen: %s\n", strings.Join(parts, ", "))
	}
	for _, s := range c.Sources {
		switch {
		case !s.Ran:
			fmt.Fprintf(b, "  %-28s not run: %s\n", s.Name, s.Note)
		default:
			fmt.Fprintf(b, "  %-28s %d/%d seeded polluted, %d/%d others polluted", s.Name, s.Polluted, s.Checked, s.OtherPolluted, s.OtherChecked)
			if s.Missing > 0 {
				fmt.Fprintf(b, ", %d not read", s.Missing)
			}
			if s.Note != "" {
				fmt.Fprintf(b, " (%s)", s.Note)
			}
			b.WriteString("\n")
		}
	}
	if c.Uncertain > 0 || c.Unverified > 0 {
		fmt.Fprintf(b, "  %d matched a write of unknown outcome, %d could not be verified\n", c.Uncertain, c.Unverified)
	}
	for _, s := range c.Samples {
		fmt.Fprintf(b, "  e.g. %s\n", s)
	}
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// sortedValues returns the keys of a Values map, most frequent first.
func sortedValues(values map[string]int64) []string {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if values[keys[i]] != values[keys[j]] {
			return values[keys[i]] > values[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
