package checks

import (
	"strings"
	"testing"
)

// TestRegistry: every check has its own letter and name, in report order.
func TestRegistry(t *testing.T) {
	var ids, names []string
	for _, c := range List() {
		if c.ID == "" || c.Name == "" || c.What == "" {
			t.Errorf("check %+v: want an ID, a name and what it checks", c)
		}
		ids, names = append(ids, c.ID), append(names, c.Name)
	}
	if got := strings.Join(ids, ","); got != "a,b,c,d" {
		t.Errorf("check IDs %s, want a,b,c,d in report order", got)
	}
	if got := strings.Join(names, ","); got != strings.Join([]string{APIVersion, Pollution, LostWrites, MixedWatchers}, ",") {
		t.Errorf("check names %s", got)
	}
}

// TestChecksJudgeObservations: each check judges the plain observations it
// is given, without a run: a polluted read-back object, a lost write, and
// partial items with and without the annotation they must carry.
func TestChecksJudgeObservations(t *testing.T) {
	value := func(s string) *string { return &s }
	writes := NewLedger("gen")
	writes.Succeeded("configmaps a|x", "w0-2")
	writes.Succeeded("configmaps a|y", "w0-1")
	obs := &Observations{
		Wildcard: true, Listers: 1, MixedWatchers: 1, Writers: 1, Loaded: true, Writes: writes,
		ReadBack: &ReadBack{
			Seeded: []string{"configmaps a|x", "configmaps a|y"},
			Sources: []Source{{Name: `get rv="" (etcd quorum)`, Ran: true, Quorum: true, Objects: []Object{
				{Key: "configmaps a|x", Seeded: true, Written: "w0-1", OriginalAPIVersion: value("")},
				{Key: "configmaps a|y", Seeded: true, Written: "w0-1"},
			}}},
		},
	}
	all := New()
	typed := Expectation{}
	for _, c := range all {
		o, ok := c.(PartialObserver)
		if !ok {
			continue
		}
		o.ObservePartial(Partial{Op: "list", Worker: Lister, Cluster: "*", Item: ObjectKey{Resource: "configmaps", Cluster: "a", Name: "x"}, Want: typed})
		o.ObservePartial(Partial{Op: "list", Worker: Lister, Cluster: "*", Item: ObjectKey{Resource: "configmaps", Cluster: "a", Name: "y"}, Want: typed, OriginalAPIVersion: value("")})
		o.ObservePartial(Partial{Op: "watch", Worker: MixedWatcher, Cluster: "a", Item: ObjectKey{Resource: "configmaps", Cluster: "a", Name: "x"}, Want: typed, OriginalAPIVersion: value("")})
	}
	want := map[string][2]int64{ // checked, violations
		APIVersion:    {2, 1},
		Pollution:     {2, 1},
		LostWrites:    {2, 1},
		MixedWatchers: {1, 1},
	}
	for _, c := range all {
		r := c.Result(obs)
		name := c.Info().Name
		if got := [2]int64{r.Checked, r.Violations}; !r.Enabled || !r.Ran || got != want[name] {
			t.Errorf("%s: %+v, want enabled, ran, checked and violated %v", name, r, want[name])
		}
		if len(r.Samples) != 1 {
			t.Errorf("%s: samples %q, want one", name, r.Samples)
		}
	}
	if got := all[2].Result(obs).Samples; len(got) == 1 && got[0] != `configmaps a|x: gen="w0-1", last successful write "w0-2"` {
		t.Errorf("lost write sample %q", got[0])
	}
	if got := all[3].Result(obs).SingleClusterAnnotated(); got != 1 {
		t.Errorf("single-cluster events annotated: %d, want 1", got)
	}
}
