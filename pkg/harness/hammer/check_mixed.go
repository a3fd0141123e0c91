package hammer

import (
	"fmt"
	"strconv"
	"strings"
)

// Scopes of a mixed-watchers watch, as they appear in check (d)'s values.
const (
	mixedWildcard      = "wildcard"
	mixedSingleCluster = "single-cluster"
)

// mixedWatchCheck is check (d): wildcard and single-cluster partial-metadata
// watches of the same resource, open at the same time, each get their own
// answer. The watch cache serializes an event once per encoder identifier and
// hands the bytes to every watcher with that identifier, and wildcard and
// single-cluster partial-metadata watches share one. On the pristine fork the
// wildcard watch writes "" into the cached object itself, so single-cluster
// watchers receive it too. So every wildcard event must carry what check (a)
// asks (a custom resource its own apiVersion, a typed object no key), and no
// single-cluster event may carry the key.
type mixedWatchCheck struct{ tally }

func newMixedWatchCheck() *mixedWatchCheck { return &mixedWatchCheck{} }

func (m *mixedWatchCheck) Info() CheckInfo {
	return CheckInfo{ID: "d", Name: CheckMixedWatchers,
		What: "with --mixed-watchers: wildcard and single-cluster partial-metadata watches of the same resource, " +
			"open at the same time, each get their own answer (wildcard events as check (a) asks, " +
			"single-cluster events no kcp.io/original-api-version)"}
}

func (m *mixedWatchCheck) observePartial(s seenPartial) {
	if s.worker != mixedWatcherWorker {
		return
	}
	got := s.meta.Annotations.OriginalAPIVersion
	scope := mixedSingleCluster
	shown, want, ok := missingValue, noAnnotation, got == nil
	if got != nil {
		shown = strconv.Quote(*got)
	}
	if s.cluster == "*" {
		scope = mixedWildcard
		shown, want, ok = s.res.judgeWildcardItem(got)
	}
	m.add(scope+": "+shown, ok, func() string {
		return fmt.Sprintf("%s: %s %s: %s=%s, want %s",
			s.op, s.res.Resource, describePartial(s.meta), OriginalAPIVersionAnnotation, shown, want)
	})
}

func (m *mixedWatchCheck) Result(obs *observations) CheckResult {
	r := m.result()
	r.Enabled = true
	switch {
	case obs.probe:
		r.Enabled, r.Ran, r.Note = false, false, "not run in a probe"
	case obs.opts.MixedWatchers == 0:
		r.Enabled, r.Ran, r.Note = false, false, "no --mixed-watchers"
	case !obs.loaded:
		r.Ran, r.Note = false, "the load did not run"
	case r.Checked == 0:
		r.Note = "the mixed watchers received no event"
	}
	return r
}

// SingleClusterAnnotated counts the single-cluster events of check (d) that
// carried kcp.io/original-api-version: an answer meant for a wildcard watcher.
func (c CheckResult) SingleClusterAnnotated() int64 {
	var n int64
	for k, v := range c.Values {
		if strings.HasPrefix(k, mixedSingleCluster+": ") && k != mixedSingleCluster+": "+missingValue {
			n += v
		}
	}
	return n
}
