package export

import (
	_ "embed"
	"fmt"
	"strings"
)

// RaceSuiteFile holds the figures of kcp's whole shared e2e suite under the
// race target (make test-e2e-shared-minimal-race with no WHAT), which the
// race target's pull request quotes: a row of its table for each tree, and
// each package's time and failure in its appendix (AppendixFile). Every
// field empty (as committed until the suite was measured) writes neither;
// every figure is one measured, never one estimated.
const RaceSuiteFile = "race-suite-run.json"

//go:embed race-suite-run.json
var raceSuiteJSON []byte

// RaceSuiteRun is one run of kcp's whole shared e2e suite under the race
// target. Durations and sizes are written as the text shows them ("47 min",
// "9.1 GiB").
type RaceSuiteRun struct {
	// KCP is the tree that ran, as a reader can check it out ("kcp main at
	// dac74f5955f1 with the four pull requests"), and Tree its name in the
	// table ("kcp main `dac74f5955f1`"); Machine what it ran on, and how
	// ("4 cores, 16 GiB").
	KCP     string `json:"kcp"`
	Tree    string `json:"tree"`
	Machine string `json:"machine"`
	// Result is what the target ended with, in a sentence or two ("passed,
	// no race report"); Failed how many tests failed ("0"), RaceReports how
	// many race reports were written ("0").
	Result      string `json:"result"`
	Failed      string `json:"failed"`
	RaceReports string `json:"raceReports"`
	// Wall is the target's wall time; WallWithoutRace that of
	// make test-e2e-shared-minimal on the same tree, if measured.
	Wall            string `json:"wall"`
	WallWithoutRace string `json:"wallWithoutRace"`
	// PeakRSS is kcp's peak resident memory under the target, and
	// PeakRSSWithoutRace without -race, if measured; PeakRSSCommand how
	// it was read (the command a reader runs to see it).
	PeakRSS            string `json:"peakRSS"`
	PeakRSSWithoutRace string `json:"peakRSSWithoutRace"`
	PeakRSSCommand     string `json:"peakRSSCommand"`
	// Packages are the e2e packages' times, as go test reports them.
	Packages []RaceSuitePackage `json:"packages"`
	// Release is the same suite on a release of kcp, for the cherry-pick
	// (nil if not run there).
	Release *RaceSuiteRelease `json:"release,omitempty"`
}

// RaceSuiteRelease is the whole suite under the target on a kcp release:
// the tree ("kcp v0.32.3 with ...") and its name in the table, what it ended
// with, how many tests failed and race reports were written, its wall time
// and kcp's peak RSS.
type RaceSuiteRelease struct {
	KCP         string `json:"kcp"`
	Tree        string `json:"tree"`
	Result      string `json:"result"`
	Failed      string `json:"failed"`
	RaceReports string `json:"raceReports"`
	Wall        string `json:"wall"`
	PeakRSS     string `json:"peakRSS"`
}

// RaceSuitePackage is one e2e package's time under the target and, if
// measured, without -race, and what failed in it ("" if it passed).
type RaceSuitePackage struct {
	Package     string `json:"package"`
	Race        string `json:"race"`
	WithoutRace string `json:"withoutRace"`
	Failure     string `json:"failure,omitempty"`
}

func loadRaceSuiteRun() (*RaceSuiteRun, error) {
	return loadFigures(RaceSuiteFile, raceSuiteJSON, parseRaceSuiteRun)
}

// parseRaceSuiteRun reads a RaceSuiteFile: nil when every field is empty,
// an error naming what is missing when only some are set.
func parseRaceSuiteRun(data []byte) (*RaceSuiteRun, error) {
	var r RaceSuiteRun
	if err := decodeStrict(data, &r); err != nil {
		return nil, err
	}
	if r.KCP == "" && r.Tree == "" && r.Machine == "" && r.Result == "" && r.Failed == "" && r.RaceReports == "" &&
		r.Wall == "" && r.WallWithoutRace == "" && r.PeakRSS == "" && r.PeakRSSWithoutRace == "" && r.PeakRSSCommand == "" &&
		len(r.Packages) == 0 && r.Release == nil {
		return nil, nil
	}
	missing := unset([]field{
		{"kcp", r.KCP}, {"tree", r.Tree}, {"machine", r.Machine}, {"result", r.Result}, {"failed", r.Failed},
		{"raceReports", r.RaceReports}, {"wall", r.Wall}, {"peakRSS", r.PeakRSS}, {"peakRSSCommand", r.PeakRSSCommand},
	})
	if len(r.Packages) == 0 {
		missing = append(missing, "packages")
	}
	if rel := r.Release; rel != nil {
		missing = append(missing, unset([]field{
			{"release.kcp", rel.KCP}, {"release.tree", rel.Tree}, {"release.result", rel.Result}, {"release.failed", rel.Failed},
			{"release.raceReports", rel.RaceReports}, {"release.wall", rel.Wall}, {"release.peakRSS", rel.PeakRSS},
		})...)
	}
	withoutRace := 0
	for i, p := range r.Packages {
		if p.Package == "" || p.Race == "" {
			missing = append(missing, fmt.Sprintf("packages[%d].package and .race", i))
		}
		if p.WithoutRace != "" {
			withoutRace++
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("some figures of the whole suite's run are set, but not %s: give all or none", strings.Join(missing, ", "))
	}
	if withoutRace != 0 && withoutRace != len(r.Packages) {
		return nil, fmt.Errorf("%d of %d packages have a time without -race: give it for every package or none", withoutRace, len(r.Packages))
	}
	return &r, nil
}

// WithoutRace says whether the packages have times without -race.
func (r *RaceSuiteRun) WithoutRace() bool {
	return len(r.Packages) > 0 && r.Packages[0].WithoutRace != ""
}
