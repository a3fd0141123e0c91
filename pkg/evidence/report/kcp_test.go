package report

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestKCPRatioSummary(t *testing.T) {
	round := func(pr, pa, fpr, fpa int64) KCPRound {
		s := 10 * time.Second
		return KCPRound{
			First:   Pristine,
			Partial: RatePair{Rated{Lists: pr, Elapsed: s}, Rated{Lists: pa, Elapsed: s}},
			Full:    RatePair{Rated{Lists: fpr, Elapsed: s}, Rated{Lists: fpa, Elapsed: s}},
		}
	}
	k := &RealKCP{Ratios: []KCPRatio{
		{Objects: 150, Workspaces: 3, Annotations: 3, Lister: "v1:0", Bound: 10 * time.Second,
			Rounds: []KCPRound{round(100, 100, 50, 50)}},
		{Objects: 150, Workspaces: 3, Annotations: 16, Lister: "v1:0", Bound: 10 * time.Second,
			Rounds: []KCPRound{round(100, 90, 50, 50), round(100, 110, 50, 55)}},
	}}
	k.Duel.Pristine.Variant, k.Duel.Patched.Variant = Pristine, Patched
	r := &k.Ratios[1]
	if got := r.Partial(); !near(got.Ratio, 1.0) || !near(got.Min, 0.9) || !near(got.Max, 1.1) || !near(got.StdDev, 0.1) {
		t.Errorf("partial summary %+v, want ratio 1, min 0.9, max 1.1, stddev 0.1", got)
	}
	if got := r.Full(); !near(got.Ratio, 1.05) || !near(got.Min, 1) || !near(got.Max, 1.1) {
		t.Errorf("full summary %+v", got)
	}
	if err := k.validate(); err != nil {
		t.Errorf("validate() = %v", err)
	}
	md := k.Markdown()
	for _, want := range []string{"3 extra annotations each", "16 extra annotations each", "**1.000×** stock (per round 0.900 to 1.100", "**1.050×**", "| 2 | pristine | 10.0 | 11.0 | 1.100 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	r.Rounds[0].Partial.Patched.Lists = -1
	if err := k.validate(); err == nil || !strings.Contains(err.Error(), "realKCP.ratios[1].rounds[0]") {
		t.Errorf("validate() = %v, want the second ratio's first round named", err)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(a), math.Abs(b)) }
