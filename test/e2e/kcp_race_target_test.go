package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/harness/racereport"
)

// The selection of kcp's race target the proof runs (docs/races.md, "The
// proof"): kcp's conformance tests that list partial metadata or across
// logical clusters, the pin bump's test and its concurrent LISTs among them.
const (
	raceTargetWhat     = "./test/e2e/conformance"
	raceTargetTestArgs = "-run 'TestPartialMetadata|CrossLogicalClusterList' -timeout 30m -v"
	// raceTargetTimeout bounds one run of hack/kcp-race-target.sh: a cold
	// -race build of kcp is most of it.
	raceTargetTimeout = 45 * time.Minute
)

// TestRealKCPRaceTarget runs kcp's own make target from kcp-patches/
// (test-e2e-shared-minimal-race, kcp-patches/4-race-e2e-target) on a copy of
// KCP_SOURCE with kcp-patches/ applied, through hack/kcp-race-target.sh:
//
//   - stock (kcp's fork pin): the target must fail, and kcp must have written
//     a race report naming setKCPOriginalAPIVersionAnnotation (the positive
//     control: what the target exists to catch);
//   - carried (the overlay for the fork commit, and the informer fix): the
//     target must pass, with no race report.
//
// Each run leaves .build/kcp-race-target/<variant>/test-race-target/.
func TestRealKCPRaceTarget(t *testing.T) {
	src := kcpSource(t, "kcp's race target runs on a kcp source tree: set "+EnvKCPSource)
	root := testfs.RepoRoot(t)
	// The script's scratch directory, set here so that the report directory
	// below is read where the script wrote it.
	scratch := filepath.Join(root, ".build", "kcp-race-target")
	for _, variant := range []string{"stock", "carried"} {
		t.Run(variant, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), raceTargetTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "kcp-race-target.sh"), variant)
			// GOFLAGS empty: kcp builds with its own flags, not the suite's
			// (-trimpath would miss the build cache of earlier runs).
			cmd.Env = append(os.Environ(), EnvKCPSource+"="+src, "OUT="+scratch, "RUN=test-race-target", "GOFLAGS=",
				"WHAT="+raceTargetWhat, "TEST_ARGS="+raceTargetTestArgs)
			out, err := cmd.CombinedOutput()
			t.Logf("hack/kcp-race-target.sh %s:\n%s", variant, out)
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Fatalf("hack/kcp-race-target.sh %s: %v", variant, err)
			}
			// OUT/<variant>/<RUN>/work/.kcp-race: kcp's RACE_LOG_DIR under the
			// WORK_DIR the script gives kcp's make.
			dir := filepath.Join(scratch, variant, "test-race-target", "work", ".kcp-race")
			reps, files, perr := racereport.ParseDir(dir)
			if perr != nil {
				t.Fatalf("%s: %v", dir, perr)
			}
			named := len(reportsOnTheBug(reps))
			t.Logf("%s: kcp's race target exited %v; %d race report(s) in %d file(s), %d naming setKCPOriginalAPIVersionAnnotation", variant, err, len(reps), len(files), named)
			switch variant {
			case "stock":
				if err == nil {
					t.Errorf("positive control: kcp's race target passed at the fork pin")
				}
				if named == 0 {
					t.Errorf("positive control: no race report names setKCPOriginalAPIVersionAnnotation at the fork pin (%d report(s) in %s)", len(reps), dir)
				}
			case "carried":
				if err != nil {
					t.Errorf("kcp's race target failed with the carry and the informer fix: %v", err)
				}
				if len(reps) > 0 {
					t.Errorf("kcp's race target: %d race report(s) with the carry and the informer fix, in %s", len(reps), dir)
				}
			}
		})
	}
}
