// Package report is the schema of the report `make evidence` (cmd/evidence,
// pkg/harness/measure) writes to evidence/duel.json and `carry export`
// summarizes in PR.md, and its markdown (the summary and evidence/README.md;
// report/chart draws the charts): the same hammer load against a test shard
// linked against the pristine fork and one linked against the carry, one
// shard under load at a time.
//
// It sits under pkg/evidence, apart from the harness that writes the reports
// and the tool that quotes them, so that neither imports the other.
//
// It holds three measurements:
//
//   - the duel: the full load (listers, watchers, writers) until its bound
//     or the shard's death, with the successful LISTs of every second;
//   - a single lister and nothing else, in alternating rounds, where the
//     pristine fork survives: the carry's cost as a throughput ratio;
//   - listers only, 1 → 2 → 4 → ... of them: the patched shard's throughput
//     and whether the pristine one dies at each step.
//
// The package depends on the standard library and pkg/util only, so that the
// carry CLI (built without the workspace) can read the document.
package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"time"
)

// Schema identifies the document and its version.
const Schema = "kcp-carry/duel/v1"

// Variant names of the two shards.
const (
	Pristine = "pristine" // the fork as kcp v0.32.3 ships it (GOWORK=off)
	Patched  = "patched"  // the fork with the carry (go.work → .overlay/)
)

// Report is evidence/duel.json.
type Report struct {
	// Schema is always Schema.
	Schema string `json:"schema"`
	// Started is when the measurements began; Elapsed their wall time,
	// shard starts included.
	Started time.Time     `json:"started"`
	Elapsed time.Duration `json:"elapsedNanos"`

	Setup        Setup        `json:"setup"`
	Duel         Duel         `json:"duel"`
	SingleLister SingleLister `json:"singleLister"`
	Scaling      Scaling      `json:"scaling"`
	// RealKCP is the comparison on kcp itself, when a kcp source was given.
	RealKCP *RealKCP `json:"realKCP,omitempty"`

	// Notes are what a reader must know to trust the numbers: anomalies
	// (the pristine shard survived the duel, the patched one answered 5xx)
	// and caveats.
	Notes []string `json:"notes,omitempty"`
}

// Setup is where and on what the measurements ran.
type Setup struct {
	// Commit is the repository's HEAD, with "+dirty" if its tracked files
	// had changes ("" outside a git checkout).
	Commit string `json:"commit,omitempty"`
	// Note is the operator's remark, e.g. that the machine was shared.
	Note string `json:"note,omitempty"`
	// Command is the command line that measured, e.g. "evidence --note ...".
	Command   string `json:"command,omitempty"`
	GoVersion string `json:"goVersion"`
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	CPUs      int    `json:"cpus"`
	// LoadAvgBefore and LoadAvgAfter are /proc/loadavg's 1, 5 and 15
	// minute load averages when the measurements began and ended ("" where
	// there is no /proc/loadavg): a busy machine shows here.
	LoadAvgBefore string `json:"loadAvgBefore,omitempty"`
	LoadAvgAfter  string `json:"loadAvgAfter,omitempty"`
	// Shards are the two test shard binaries.
	Shards []Shard `json:"shards"`
	// Resources, Clusters and Objects are what the hammer seeded and
	// listed: Objects per logical cluster and resource, each with
	// Annotations extra annotations.
	Resources   []string `json:"resources"`
	Clusters    []string `json:"clusters"`
	Objects     int      `json:"objects"`
	Annotations int      `json:"annotations"`
}

// Shard is one test shard binary.
type Shard struct {
	Variant string `json:"variant"` // Pristine or Patched
	// Build is how it was built, e.g. "GOWORK=off go build ./cmd/testshard".
	Build string `json:"build"`
	// Binary is the binary's path as given to the runner.
	Binary string `json:"binary"`
}

// Load is the hammer load of a run.
type Load struct {
	// Listers is the request shape of each lister (hammer's --lister-shapes
	// spelling, e.g. "v1:0", "kcp:0", "v1beta1::paged").
	Listers   []string `json:"listers"`
	Watchers  int      `json:"watchers"`
	Writers   int      `json:"writers"`
	WriteMode string   `json:"writeMode,omitempty"`
	// Bound and Budget bound each run: its duration and its requests.
	Bound  time.Duration `json:"boundNanos"`
	Budget int64         `json:"budget"`
}

// Duel is the full load against each shard.
type Duel struct {
	Load     Load `json:"load"`
	Pristine Run  `json:"pristine"`
	Patched  Run  `json:"patched"`
}

// SingleLister is one lister, no watchers, no writers, in rounds that
// alternate between the shards (so machine drift hits both alike).
type SingleLister struct {
	Load   Load    `json:"load"`
	Rounds []Round `json:"rounds"`
	// The JSON also holds "pristine" and "patched" (Totals) and "ratio"
	// (Ratio), derived from the rounds when it is written.
}

// Totals adds up the rounds of each shard.
func (s SingleLister) Totals() (pristine, patched Total) {
	for _, rd := range s.Rounds {
		pristine.Add(rd.Pristine)
		patched.Add(rd.Patched)
	}
	return pristine, patched
}

// Ratio is the patched total's LIST/s over the pristine one's: 1 means the
// carry costs no throughput, 0.95 that it costs 5 %.
func (s SingleLister) Ratio() float64 {
	pristine, patched := s.Totals()
	return Ratio(patched, pristine)
}

// Round is one single-lister round: a run against each shard.
type Round struct {
	Pristine Run `json:"pristine"`
	Patched  Run `json:"patched"`
}

// Total adds up runs. Its JSON also holds "listsPerSecond".
type Total struct {
	Lists int64         `json:"lists"`
	Alive time.Duration `json:"aliveNanos"`
	// Deaths is how many of the runs killed the shard.
	Deaths int `json:"deaths"`
}

// ListsPerSecond is Lists / Alive.
func (t Total) ListsPerSecond() float64 { return Rate(t.Lists, t.Alive) }

// Scaling is listers only, more at each step.
type Scaling struct {
	// Load is each step's load but for the number of listers (Listers
	// holds the variant every lister uses).
	Load  Load   `json:"load"`
	Steps []Step `json:"steps"`
}

// Step is one number of listers against each shard.
type Step struct {
	Listers  int `json:"listers"`
	Patched  Run `json:"patched"`
	Pristine Run `json:"pristine"`
}

// Run is one hammer run against one shard.
type Run struct {
	Variant string `json:"variant"` // Pristine or Patched
	// Requests are the load's requests of every operation (a page of a
	// paged LIST, a watch, a write's GET each count), Failed those that
	// failed.
	Requests int64 `json:"requests"`
	Failed   int64 `json:"failed"`
	// Server5xx is how many of the run's requests got a 5xx.
	Server5xx int64 `json:"server5xx"`
	// Lists is how many LIST requests succeeded.
	Lists int64 `json:"lists"`
	// LoadElapsed is how long the load ran; Alive how much of it the shard
	// was alive (TimeToDeath if it died in the load).
	LoadElapsed time.Duration `json:"loadElapsedNanos"`
	Alive       time.Duration `json:"aliveNanos"`
	// Died says the shard process exited on its own during the run;
	// TimeToDeath is from the start of the load to the first failure of the
	// fatal streak (or the exit), DeathPhase the hammer's phase then.
	Died        bool          `json:"died"`
	TimeToDeath time.Duration `json:"timeToDeathNanos,omitempty"`
	DeathPhase  string        `json:"deathPhase,omitempty"`
	// Fatal is the runtime's fatal error in the shard's stderr, if any.
	Fatal *Fatal `json:"fatal,omitempty"`
	// Verdict is the hammer's ("clean", "server died", ...).
	Verdict string `json:"verdict"`
	// Timeline is the successful LISTs and failures of each second of the
	// load (the duel's runs only).
	Timeline []Second `json:"timeline,omitempty"`
}

// Fatal is the fatal runtime error a shard died of.
type Fatal struct {
	// Signature is the text after "fatal error: ", e.g. "concurrent map
	// writes", or "DATA RACE".
	Signature string `json:"signature"`
	// Frames are the top frames of the goroutine that threw, innermost
	// first, as "function (file:line)".
	Frames []string `json:"frames,omitempty"`
	// Where is the innermost frame outside the Go runtime, e.g.
	// "k8s.io/apiserver/pkg/endpoints/handlers.setKCPOriginalAPIVersionAnnotation".
	Where string `json:"where,omitempty"`
}

// ListsPerSecond is Lists / Alive; the JSON holds it as "listsPerSecond".
func (r Run) ListsPerSecond() float64 { return Rate(r.Lists, r.Alive) }

// Second is one second of a load (see hammer.Timeline).
type Second struct {
	Second int           `json:"second"`
	Span   time.Duration `json:"spanNanos"`
	Lists  int64         `json:"lists"`
	Errors int64         `json:"errors"`
}

// ListsPerSecond is Lists over Span.
func (s Second) ListsPerSecond() float64 {
	if s.Span <= 0 {
		return 0
	}
	return float64(s.Lists) / s.Span.Seconds()
}

// Rate is lists / alive in LISTs per second (0 for no time).
func Rate(lists int64, alive time.Duration) float64 {
	if alive <= 0 {
		return 0
	}
	return float64(lists) / alive.Seconds()
}

// Add adds a run to the total.
func (t *Total) Add(r Run) {
	t.Lists += r.Lists
	t.Alive += r.Alive
	if r.Died {
		t.Deaths++
	}
}

// Write writes the report as indented JSON.
func (r *Report) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Marshal is Write into a byte slice.
func (r *Report) Marshal() ([]byte, error) {
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// IsDuel reports whether data is JSON that says it is a duel document
// (its "schema" starts with "kcp-carry/duel/"), whatever its version.
func IsDuel(data []byte) bool {
	var head struct {
		Schema string `json:"schema"`
	}
	return json.Unmarshal(data, &head) == nil && strings.HasPrefix(head.Schema, "kcp-carry/duel/")
}

// Parse decodes a duel document strictly (no unknown fields, no missing
// field, nothing after it) and validates it. Derived fields (rates, totals,
// ratios) are read and ignored: they are derived again from the counts.
func Parse(data []byte) (*Report, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Report
	if err := dec.Decode(&r); err != nil {
		if IsDuel(data) {
			return nil, fmt.Errorf("not a valid %s document: %w", Schema, err)
		}
		return nil, fmt.Errorf("not a duel document: %w", err)
	}
	if dec.More() {
		return nil, errors.New("trailing data after the document")
	}
	if err := missingField(data, reflect.TypeOf(r), ""); err != nil {
		return nil, fmt.Errorf("not a valid %s document: %w", Schema, err)
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// Read reads and parses the document at path; errors name the file.
func Read(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// validate reports the first inconsistency of a document read from disk:
// another schema, runs of the wrong shard, negative counts, steps that do
// not grow.
func (r *Report) validate() error {
	if r.Schema != Schema {
		return fmt.Errorf("schema %q, want %q", r.Schema, Schema)
	}
	type labelled struct {
		where, variant string
		run            Run
	}
	runs := []labelled{
		{"duel.pristine", Pristine, r.Duel.Pristine},
		{"duel.patched", Patched, r.Duel.Patched},
	}
	for i, rd := range r.SingleLister.Rounds {
		runs = append(runs,
			labelled{fmt.Sprintf("singleLister.rounds[%d].pristine", i), Pristine, rd.Pristine},
			labelled{fmt.Sprintf("singleLister.rounds[%d].patched", i), Patched, rd.Patched})
	}
	prev := 0
	for i, s := range r.Scaling.Steps {
		if s.Listers <= prev {
			return fmt.Errorf("scaling.steps[%d]: %d listers after %d; steps must grow", i, s.Listers, prev)
		}
		prev = s.Listers
		runs = append(runs,
			labelled{fmt.Sprintf("scaling.steps[%d].pristine", i), Pristine, s.Pristine},
			labelled{fmt.Sprintf("scaling.steps[%d].patched", i), Patched, s.Patched})
	}
	if k := r.RealKCP; k != nil {
		runs = append(runs,
			labelled{"realKCP.duel.pristine", Pristine, k.Duel.Pristine},
			labelled{"realKCP.duel.patched", Patched, k.Duel.Patched})
	}
	for _, x := range runs {
		if err := x.run.check(x.variant); err != nil {
			return fmt.Errorf("%s: %w", x.where, err)
		}
	}
	if r.RealKCP != nil {
		return r.RealKCP.validate()
	}
	return nil
}

// Ratio is patched's LIST/s over pristine's (0 when pristine has none).
func Ratio(patched, pristine Total) float64 {
	if pristine.ListsPerSecond() <= 0 {
		return 0
	}
	return patched.ListsPerSecond() / pristine.ListsPerSecond()
}

func (r Run) check(variant string) error {
	if r.Variant != variant {
		return fmt.Errorf("variant %q, want %q", r.Variant, variant)
	}
	if r.Requests < 0 || r.Failed < 0 || r.Lists < 0 || r.Failed > r.Requests || r.Lists > r.Requests {
		return fmt.Errorf("inconsistent counts: %d requests, %d failed, %d lists", r.Requests, r.Failed, r.Lists)
	}
	if r.Alive < 0 || r.Alive > r.LoadElapsed {
		return fmt.Errorf("alive %s of a %s load", r.Alive, r.LoadElapsed)
	}
	if !r.Died && (r.TimeToDeath != 0 || r.Fatal != nil) {
		return errors.New("a time to death or a fatal error, but it did not die")
	}
	return nil
}
