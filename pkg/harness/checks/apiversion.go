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
	r := a.result()
	r.Enabled = true
	switch {
	case !obs.Probe && !obs.Wildcard:
		r.Enabled, r.Ran, r.Note = false, false, "not applicable: kcp annotates wildcard partial items only"
	case !obs.Probe && obs.Listers+obs.Watchers == 0:
		r.Enabled, r.Ran, r.Note = false, false, "no listers or watchers"
	case !obs.Loaded:
		r.Ran, r.Note = false, "the load did not run"
	case r.Checked == 0:
		r.Note = "no wildcard partial item was received"
	}
	return r
}
