package e2e

import (
	"testing"

	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
)

// TestRealKCPPatchedMixedWatchers is check (d) on a kcp built with the carry:
// wildcard and single-cluster partial-metadata watchers of ClusterRoles and
// ConfigMaps in root, open at the same time over the same cached events while
// labels are written, each get their own answer: no event carries the key.
func TestRealKCPPatchedMixedWatchers(t *testing.T) {
	bin := kcpBinary(t, "patched")
	s := startKCP(t, bin, t.TempDir())
	rep := runHammer(t, mixedWatchOptions(t, s.Config(), s.Done(), []string{"root"}, 2, 2, 10))
	if rep.Death.Died || s.Died() {
		t.Fatalf("the patched kcp died %s into the mixed-watch load: %s\n%s", rep.TimeToDeath, rep.Death.Evidence, s.Fatal())
	}
	expectOwnAnswers(t, rep)
	expectCleanOutput(t, s.Server)
}

// TestRealKCPPristineMixesUpWatchers is its positive control on stock kcp
// v0.32.3: one wildcard and one single-cluster watcher per meta version and
// one writer are enough for the single-cluster watcher to receive the ""
// the wildcard one wrote into the cached object.
func TestRealKCPPristineMixesUpWatchers(t *testing.T) {
	bin := kcpBinary(t, "pristine")
	s := startKCP(t, bin, t.TempDir())
	o := mixedWatchOptions(t, s.Config(), s.Done(), []string{"root"}, 1, 1, 5)
	o.WriteMode = hammer.WritePatch
	rep := runHammer(t, o)
	if rep.Death.Died || s.Died() {
		t.Fatalf("the pristine kcp died %s into a low mixed-watch load, so the mix-up could not be observed: %s\n%s", rep.TimeToDeath, rep.Death.Evidence, s.Fatal())
	}
	expectMixedUp(t, rep)
}
