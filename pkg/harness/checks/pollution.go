package checks

import "fmt"

// pollutionCheck is check (b): after the load, no full-object LIST or GET of
// the objects, from the watch cache or from etcd, shows
// kcp.io/original-api-version.
type pollutionCheck struct{}

func (pollutionCheck) Info() Info {
	return Info{ID: "b", Name: Pollution,
		What: "afterwards no full-object LIST or GET (watch cache or etcd) shows kcp.io/original-api-version"}
}

// SourceResult is check (b) for one way of reading the objects back.
type SourceResult struct {
	Name string `json:"name"`
	Ran  bool   `json:"ran"`
	Note string `json:"note,omitempty"`
	// Checked seeded objects were read; Polluted of them carry the annotation;
	// Missing were not in the answer.
	Checked  int64 `json:"checked"`
	Polluted int64 `json:"polluted"`
	Missing  int64 `json:"missing,omitempty"`
	// Other objects in the same lists (not seeded by the hammer).
	OtherChecked  int64    `json:"otherChecked,omitempty"`
	OtherPolluted int64    `json:"otherPolluted,omitempty"`
	Samples       []string `json:"samples,omitempty"`
}

func (pollutionCheck) Result(obs *Observations) Result {
	r := Result{Enabled: !obs.NoAfterChecks}
	if r.Note = obs.noReadBack(); r.Note != "" {
		return r
	}
	r.Ran = true
	for _, s := range obs.ReadBack.Sources {
		sr := SourceResult{Name: s.Name, Ran: s.Ran, Note: s.Note, Missing: s.Missing}
		for _, o := range s.Objects {
			polluted := o.OriginalAPIVersion != nil
			switch {
			case o.Seeded && polluted:
				sr.Checked++
				sr.Polluted++
			case o.Seeded:
				sr.Checked++
			case polluted:
				sr.OtherChecked++
				sr.OtherPolluted++
			default:
				sr.OtherChecked++
			}
			if polluted && len(sr.Samples) < maxSamples {
				sr.Samples = append(sr.Samples, fmt.Sprintf("%s: %s=%q", o.Key, OriginalAPIVersionAnnotation, *o.OriginalAPIVersion))
			}
		}
		r.Sources = append(r.Sources, sr)
		if !sr.Ran {
			continue
		}
		r.Checked += sr.Checked + sr.OtherChecked
		r.Violations += sr.Polluted + sr.OtherPolluted
		for _, smp := range sr.Samples {
			if len(r.Samples) < maxSamples {
				r.Samples = append(r.Samples, sr.Name+": "+smp)
			}
		}
	}
	if r.Checked == 0 {
		r.Note = "no object was read back"
	}
	return r
}
