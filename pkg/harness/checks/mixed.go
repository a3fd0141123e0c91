package checks

import (
	"strconv"
	"strings"
)

// Scopes of a mixed-watchers watch, as they appear in check (d)'s values
// and the hammer's operation names.
const (
	WildcardScope      = "wildcard"
	SingleClusterScope = "single-cluster"
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

func (m *mixedWatchCheck) Info() Info {
	return Info{ID: "d", Name: MixedWatchers,
		What: "with --mixed-watchers: wildcard and single-cluster partial-metadata watches of the same resource, " +
			"open at the same time, each get their own answer (wildcard events as check (a) asks, " +
			"single-cluster events no kcp.io/original-api-version)"}
}

func (m *mixedWatchCheck) ObservePartial(s Partial) {
	if s.Worker != MixedWatcher {
		return
	}
	got := s.OriginalAPIVersion
	scope := SingleClusterScope
	shown, want, ok := MissingValue, noAnnotation, got == nil
	if got != nil {
		shown = strconv.Quote(*got)
	}
	if s.Cluster == "*" {
		scope = WildcardScope
		shown, want, ok = s.Want.Judge(got)
	}
	m.add(scope+": "+shown, ok, func() string { return s.sample(shown, want) })
}

func (m *mixedWatchCheck) Result(obs *Observations) Result {
	off := ""
	switch {
	case obs.Probe:
		off = "not run in a probe"
	case obs.MixedWatchers == 0:
		off = "no --mixed-watchers"
	}
	return m.observed(obs, off, "the mixed watchers received no event")
}

// SingleClusterAnnotated counts the single-cluster events of check (d) that
// carried kcp.io/original-api-version: an answer meant for a wildcard watcher.
func (c Result) SingleClusterAnnotated() int64 {
	var n int64
	for k, v := range c.Values {
		if strings.HasPrefix(k, SingleClusterScope+": ") && k != SingleClusterScope+": "+MissingValue {
			n += v
		}
	}
	return n
}
