package checks

import "fmt"

// lostWritesCheck is check (c): after the load, every seeded object's label,
// read from etcd, equals its last successful write.
type lostWritesCheck struct{}

func (lostWritesCheck) Info() Info {
	return Info{ID: "c", Name: LostWrites,
		What: "every object's label equals its last successful write"}
}

func (lostWritesCheck) Result(obs *Observations) Result {
	r := Result{Enabled: !obs.NoAfterChecks && !obs.Probe && obs.Writers > 0}
	switch {
	case !r.Enabled && obs.NoAfterChecks:
		r.Note = "--no-after-checks"
		return r
	case !r.Enabled:
		r.Note = "no writers ran"
		return r
	}
	if r.Note = obs.noReadBack(); r.Note != "" {
		return r
	}
	r.Ran = true
	finals := map[string]string{}
	if q := obs.ReadBack.quorum(); q != nil {
		for _, o := range q.Objects {
			finals[o.Key] = o.Written
		}
		r.Unverified = q.Missing
	}
	for _, key := range obs.ReadBack.Seeded {
		final, read := finals[key]
		if !read {
			continue
		}
		ok, uncertain, known, want := obs.Writes.verdict(key, final)
		if !known {
			r.Unverified++
			continue
		}
		r.Checked++
		if uncertain {
			r.Uncertain++
		}
		if !ok {
			r.Violations++
			if len(r.Samples) < maxSamples {
				r.Samples = append(r.Samples, fmt.Sprintf("%s: %s=%q, last successful write %q", key, obs.Writes.Label, final, want))
			}
		}
	}
	if r.Checked == 0 {
		r.Note = "no object's last write could be judged"
	}
	return r
}
