package hammer

import (
	"fmt"
	"sort"
)

// apiVersionCheck is check (a): every wildcard partial item the listers and
// watchers receive carries kcp.io/original-api-version as the contract says:
// a custom resource its own apiVersion, a typed object no key (never "").
type apiVersionCheck struct{ tally }

func newAPIVersionCheck() *apiVersionCheck { return &apiVersionCheck{} }

func (a *apiVersionCheck) Info() CheckInfo {
	return CheckInfo{ID: "a", Name: CheckAPIVersion,
		What: "every wildcard partial item of a custom resource carries kcp.io/original-api-version with its own apiVersion; " +
			"no typed item carries the key"}
}

// How a sample spells an absent annotation: received, and wanted.
const (
	missingValue = "<missing>"
	noAnnotation = "no such annotation"
)

func (a *apiVersionCheck) observePartial(s seenPartial) {
	if s.cluster != "*" || s.worker == mixedWatcherWorker {
		return
	}
	shown, want, ok := s.res.judgeWildcardItem(s.meta.Annotations.OriginalAPIVersion)
	a.add(shown, ok, func() string {
		return fmt.Sprintf("%s: %s %s: %s=%s, want %s",
			s.op, s.res.Resource, describePartial(s.meta), OriginalAPIVersionAnnotation, shown, want)
	})
}

func (a *apiVersionCheck) Result(obs *observations) CheckResult {
	r := a.result()
	r.Enabled = true
	switch {
	case !obs.probe && obs.opts.Scope != ScopeWildcard:
		r.Enabled, r.Ran, r.Note = false, false, "not applicable: kcp annotates wildcard partial items only"
	case !obs.probe && obs.opts.Listers+obs.opts.Watchers == 0:
		r.Enabled, r.Ran, r.Note = false, false, "no listers or watchers"
	case !obs.loaded:
		r.Ran, r.Note = false, "the load did not run"
	case r.Checked == 0:
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
