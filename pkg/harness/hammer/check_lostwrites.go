package hammer

import "fmt"

// lostWritesCheck is check (c): after the load, every seeded object's label,
// read from etcd, equals its last successful write.
type lostWritesCheck struct{}

func (lostWritesCheck) Info() CheckInfo {
	return CheckInfo{ID: "c", Name: CheckLostWrites,
		What: "every object's label equals its last successful write"}
}

func (lostWritesCheck) Result(obs *observations) CheckResult {
	r := CheckResult{Enabled: !obs.opts.NoAfterChecks && !obs.probe && obs.opts.Writers > 0}
	switch {
	case !r.Enabled && obs.opts.NoAfterChecks:
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
	finals := map[ObjectKey]string{}
	if q := obs.readBack.quorum(); q != nil {
		for _, o := range q.objects {
			finals[o.key] = o.meta.Labels[GenLabel]
		}
		r.Unverified = q.missing
	}
	for _, o := range obs.readBack.seeded {
		final, read := finals[o.key]
		if !read {
			continue
		}
		ok, uncertain, known, want := obs.ledger.verdict(o.key, final)
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
				r.Samples = append(r.Samples, fmt.Sprintf("%s: %s=%q, last successful write %q", o.key, GenLabel, final, want))
			}
		}
	}
	if r.Checked == 0 {
		r.Note = "no object's last write could be judged"
	}
	return r
}
