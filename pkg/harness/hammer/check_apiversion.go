package hammer

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
)

const maxSamples = 8

// CheckResult is the outcome of one correctness check.
type CheckResult struct {
	Name string `json:"name"`
	// Ran is false when the check could not run (server died, not applicable);
	// Note says why.
	Ran        bool     `json:"ran"`
	Note       string   `json:"note,omitempty"`
	Checked    int64    `json:"checked"`
	Violations int64    `json:"violations"`
	Samples    []string `json:"samples,omitempty"`
	// Values counts what was seen, for check (a): annotation value → items.
	Values map[string]int64 `json:"values,omitempty"`
	// Sources breaks a check down by where the objects were read (check (b)).
	Sources []SourceResult `json:"sources,omitempty"`
	// Uncertain counts objects whose final label matches a write whose outcome
	// was unknown (check (c)); Unverified counts objects that could not be read.
	Uncertain  int64 `json:"uncertain,omitempty"`
	Unverified int64 `json:"unverified,omitempty"`
}

// Violated reports a check that ran and found violations.
func (c CheckResult) Violated() bool { return c.Ran && c.Violations > 0 }

// apiVersionCheck is check (a): every wildcard partial item carries
// kcp.io/original-api-version equal to the served group/version.
type apiVersionCheck struct {
	mu      sync.Mutex
	checked int64
	bad     int64
	values  map[string]int64
	samples []string
}

func newAPIVersionCheck() *apiVersionCheck {
	return &apiVersionCheck{values: map[string]int64{}}
}

const missingValue = "<missing>"

// item checks one partial item served for res by op.
func (a *apiVersionCheck) item(op string, res Resource, m partialMeta) {
	shown := missingValue
	ok := m.Annotations.OriginalAPIVersion != nil
	v := ""
	if ok {
		v = *m.Annotations.OriginalAPIVersion
		shown = strconv.Quote(v)
	}
	want := res.GroupVersion()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.checked++
	a.values[shown]++
	if ok && v == want {
		return
	}
	a.bad++
	if len(a.samples) < maxSamples {
		a.samples = append(a.samples, fmt.Sprintf("%s: %s %s: %s=%s, want %q",
			op, res.Resource, describePartial(m), OriginalAPIVersionAnnotation, shown, want))
	}
}

func (a *apiVersionCheck) result() CheckResult {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := CheckResult{
		Name:       "a: original-api-version",
		Ran:        a.checked > 0,
		Checked:    a.checked,
		Violations: a.bad,
		Samples:    append([]string(nil), a.samples...),
		Values:     map[string]int64{},
	}
	for k, v := range a.values {
		r.Values[k] = v
	}
	if a.checked == 0 {
		r.Note = "no wildcard partial item was received"
	}
	return r
}

func describePartial(m partialMeta) string {
	s := m.Annotations.Cluster
	if s == "" {
		s = "?"
	}
	s += "|"
	if m.Namespace != "" {
		s += m.Namespace + "/"
	}
	return s + m.Name
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
