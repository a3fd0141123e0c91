package checks

// apiVersionCheck is check (a): every wildcard partial item the listers and
// watchers receive carries kcp.io/original-api-version as the contract says:
// a custom resource its own apiVersion, a typed object no key (never "").
type apiVersionCheck struct{ tally }

func (a *apiVersionCheck) Info() Info {
	return Info{ID: "a", Name: APIVersion,
		What: "every wildcard partial item of a custom resource carries kcp.io/original-api-version with its own apiVersion; " +
			"no typed item carries the key"}
}

func (a *apiVersionCheck) ObservePartial(s Partial) {
	if s.Cluster != "*" || s.Worker == MixedWatcher {
		return
	}
	shown, want, ok := s.Want.Judge(s.OriginalAPIVersion)
	a.add(shown, ok, func() string { return s.sample(shown, want) })
}

func (a *apiVersionCheck) Result(obs *Observations) Result {
	off := ""
	switch {
	case !obs.Probe && !obs.Wildcard:
		off = "not applicable: kcp annotates wildcard partial items only"
	case !obs.Probe && obs.Listers+obs.Watchers == 0:
		off = "no listers or watchers"
	}
	return a.observed(obs, off, "no wildcard partial item was received")
}
