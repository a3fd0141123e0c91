package report

import (
	"strings"
	"testing"
	"time"
)

func TestKCPRatioSummarizeAndCheck(t *testing.T) {
	round := func(pr, pa, fpr, fpa int64) KCPRound {
		s := 10 * time.Second
		return KCPRound{
			First:   Pristine,
			Partial: NewRatePair(NewRated(pr, 0, s), NewRated(pa, 0, s)),
			Full:    NewRatePair(NewRated(fpr, 0, s), NewRated(fpa, 0, s)),
		}
	}
	k := &RealKCP{Ratios: []KCPRatio{
		{Objects: 150, Workspaces: 3, Annotations: 3, Lister: "v1:0", Bound: 10 * time.Second,
			Rounds: []KCPRound{round(100, 100, 50, 50)}},
		{Objects: 150, Workspaces: 3, Annotations: 16, Lister: "v1:0", Bound: 10 * time.Second,
			Rounds: []KCPRound{round(100, 90, 50, 50), round(100, 110, 50, 55)}},
	}}
	k.Duel.Pristine.Variant, k.Duel.Patched.Variant = Pristine, Patched
	for i := range k.Ratios {
		k.Ratios[i].Summarize()
	}
	r := &k.Ratios[1]
	if got := r.Partial; !near(got.Ratio, 1.0) || !near(got.Min, 0.9) || !near(got.Max, 1.1) || !near(got.StdDev, 0.1) {
		t.Errorf("partial summary %+v, want ratio 1, min 0.9, max 1.1, stddev 0.1", got)
	}
	if got := r.Full; !near(got.Ratio, 1.05) || !near(got.Min, 1) || !near(got.Max, 1.1) {
		t.Errorf("full summary %+v", got)
	}
	if err := k.check(); err != nil {
		t.Errorf("check() = %v", err)
	}
	md := k.Markdown()
	for _, want := range []string{"3 extra annotations each", "16 extra annotations each", "**1.000×** stock (per round 0.900 to 1.100", "**1.050×**", "| 2 | pristine | 10.0 | 11.0 | 1.100 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	r.Rounds[0].Partial.Ratio = 2
	if err := k.check(); err == nil || !strings.Contains(err.Error(), "realKCP.ratios[1]: rounds[0]") {
		t.Errorf("check() = %v, want the second ratio's first round named", err)
	}
}
