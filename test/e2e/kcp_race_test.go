package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/internal/testkcp"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcpbuild"
	"github.com/kcp-carry/kcp-carry/pkg/carry/versionstamp"
	"github.com/kcp-carry/kcp-carry/pkg/harness/kcpe2e"
	"github.com/kcp-carry/kcp-carry/pkg/harness/partialmeta"
	"github.com/kcp-carry/kcp-carry/pkg/harness/racereport"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server/servertest"
	"github.com/kcp-carry/kcp-carry/pkg/util/atomicfile"
)

// EnvKCPRaceBinDir names the directory of the race builds, kcp and
// kcp-pristine (default ROOT/bin/race: `carry build --race`).
const EnvKCPRaceBinDir = "KCP_RACE_BIN_DIR"

// raceReadyTimeout bounds a race build's start: the race runtime makes kcp
// several times slower to bring up its controllers and etcd.
const raceReadyTimeout = 8 * time.Minute

// raceSeedLoad is the seed load's length on the carried race build.
const raceSeedLoad = 60 * time.Second

// knownRacesFile lists the races found elsewhere in kcp and written up in
// docs/races.md, by racereport.Report.Key: the race phase fails only on a
// race not in it.
const knownRacesFile = "docs/races.known"

// raceKCPBinary returns the race build of a variant (kcp or kcp-pristine in
// KCP_RACE_BIN_DIR or ROOT/bin/race) and checks from its build info that it
// is that variant and built with -race.
func raceKCPBinary(t *testing.T, variant string) string {
	t.Helper()
	kcpSource(t, "real kcp with the race detector: set "+EnvKCPSource+"=<kcp v0.32.3 source tree> and run `make test-race` (builds bin/race/kcp and bin/race/kcp-pristine)")
	root := testfs.RepoRoot(t)
	dir := filepath.Join(root, "bin", "race")
	if d := os.Getenv(EnvKCPRaceBinDir); d != "" {
		dir = d
	}
	bin := filepath.Join(dir, map[string]string{"patched": "kcp", "pristine": "kcp-pristine"}[variant])
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is set but %s is missing: run `make kcp-race` (or `make test-race`) to build it", EnvKCPSource, bin)
	}
	got := buildVariant(t, root, bin)
	race, err := kcpbuild.RaceBuild(bin)
	if err != nil {
		t.Fatal(err)
	}
	if got != variant || !race {
		t.Fatalf("%s is a %s build with -race=%t (from its build info), want %s with -race: rebuild it with `make kcp-race`", bin, got, race, variant)
	}
	return bin
}

// raceLogDir is a fresh directory for one kcp's race reports, kept under
// ROOT/.build/race/<test> so that a finding can be read after the run.
func raceLogDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(testfs.RepoRoot(t), ".build", "race", strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// raceEnv is the suite's server environment plus GORACE: a report does not
// stop kcp, and each process writes its reports to dir/race.<pid>.
func raceEnv(dir string) []string {
	return append(append([]string{}, serverEnv...), racereport.Env(dir))
}

// checkVersionStamp asserts that /version tells the race build apart.
func checkVersionStamp(t *testing.T, s *server.KCP) {
	t.Helper()
	hc, err := rest.HTTPClientFor(s.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Config().Host+"/version", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET /version: %v", err)
	}
	defer resp.Body.Close()
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("GET /version: %v", err)
	}
	if !versionstamp.IsRaceBuild(v.GitVersion) {
		t.Errorf("/version of a race build: gitVersion %q does not end in -race", v.GitVersion)
	} else {
		t.Logf("/version: gitVersion %s", v.GitVersion)
	}
}

// stopAndReadRaces stops kcp (the race runtime writes its summary at exit)
// and parses every report in dir.
func stopAndReadRaces(t *testing.T, s *server.KCP, dir string) []racereport.Report {
	t.Helper()
	if err := s.Stop(); err != nil && !s.Died() {
		// A race build that reported a race exits 66.
		t.Logf("stopping kcp: %v", err)
	}
	reps, files, err := racereport.ParseDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d race report(s) in %d file(s) in %s", len(reps), len(files), dir)
	return reps
}

// judgeCarried is the carried race build's verdict: no report with a frame
// in the handlers or the watch cache, none not already written up in
// docs/races.md, and none of a race a kcp patch fixes when the build's tree
// (KCP_SOURCE, make kcp-race's) carries that patch. Every group is written
// to dir/findings.md.
func judgeCarried(t *testing.T, dir string, reps []racereport.Report) {
	t.Helper()
	root := testfs.RepoRoot(t)
	known, err := racereport.LoadKnown(filepath.Join(root, knownRacesFile))
	if err != nil {
		t.Fatal(err)
	}
	writeFindings(t, dir, reps)
	v := known.Judge(reps, testkcp.CarriedFixes(t, root, os.Getenv(EnvKCPSource), known))
	t.Logf("carried race build: %d race report(s), %d on the handlers or the watch cache, %d known group(s), %d fixed by a kcp patch the build carries, %d new", len(reps), len(v.OnCarry), len(v.Known), len(v.Fixed), len(v.New))
	for _, r := range v.OnCarry {
		t.Errorf("a race on the handlers or the watch cache (%s):\n%s", r.Key(), r.Text)
	}
	for _, g := range v.Known {
		t.Logf("known race (%s): %s, %d report(s)", known[g.Key].Where, g.Key, len(g.Reports))
	}
	for _, g := range v.Fixed {
		t.Errorf("a race %s fixes, on a kcp built from %s, which carries it: %s, %d report(s); the first:\n%s", known[g.Key].FixedBy, os.Getenv(EnvKCPSource), g.Key, len(g.Reports), g.Reports[0].Text)
	}
	for _, g := range v.New {
		t.Errorf("a race not written up in docs/races.md (write it up, add its key to %s): %s, %d report(s); the first:\n%s", knownRacesFile, g.Key, len(g.Reports), g.Reports[0].Text)
	}
}

// writeFindings writes every group of reports to dir/findings.md, the text
// docs/races.md quotes.
func writeFindings(t *testing.T, dir string, reps []racereport.Report) {
	t.Helper()
	var md bytes.Buffer
	racereport.Markdown(&md, racereport.GroupByKey(reps))
	if err := atomicfile.Write(filepath.Join(dir, "findings.md"), md.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRealKCPRaceCarried: kcp v0.32.3 built with the carry and -race,
// started as kcp's e2e framework expects, under the seed load (8 wildcard
// partial-metadata listers, 2 watchers, 4 writers, 60 s, checks a-c), then
// kcp's own e2e subset and kcp-patches' regression test on the same kcp: no
// race report on the handlers or the watch cache, and none not already
// known. One kcp serves both, as a race build takes minutes to start.
func TestRealKCPRaceCarried(t *testing.T) {
	bin := raceKCPBinary(t, "patched")
	bins := prepareKCPE2E(t, os.Getenv(EnvKCPSource))
	// kcp's packages, each a subtest (kcp-e2e/conformance, ...,
	// kcp-e2e/regression), so that a run can pick some with -run. Their
	// test binaries are compiled when first needed.
	var names []string
	pkgs := map[string]kcpe2e.Package{"regression": kcpe2e.Regression}
	for _, p := range kcpe2e.Subset {
		names = append(names, p.Name())
		pkgs[p.Name()] = p
	}
	names = append(names, "regression")

	dir := raceLogDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), raceReadyTimeout+server.WorkspaceReadyTimeout)
	defer cancel()
	s, err := kcpe2e.StartServer(ctx, kcpe2e.ServerOptions{Binary: bin, RootDir: t.TempDir(), Tree: bins.tree, Env: raceEnv(dir), ReadyTimeout: raceReadyTimeout, Progress: t.Logf})
	if err != nil {
		t.Fatalf("starting the carried race kcp: %v", err)
	}
	servertest.StopKCPAtCleanup(t, s)
	checkVersionStamp(t, s)
	clusters, err := s.CreateWorkspaces(ctx, kcpWorkspaces)
	if err != nil {
		t.Fatalf("creating the load's workspaces on the carried race kcp: %v", err)
	}

	t.Run("load", func(t *testing.T) {
		o := kcpLoadOptions(t, s, append([]string{"root"}, clusters...))
		o.Duration = raceSeedLoad
		rep := runHammer(t, o)
		expectSurvivedClean(t, s, rep)
		expectContract(t, rep)
		t.Logf("carried race kcp: %d requests in %s (%.0f req/s), %s", rep.Requests, rep.LoadElapsed, rep.ReqPerSec, checkedCounts(rep))
	})
	t.Run("kcp-e2e", func(t *testing.T) {
		if s.Died() {
			t.Fatalf("the carried race kcp died under the load: %v", s.ExitError())
		}
		logDir := filepath.Join(bins.dir, "logs", "patched-race")
		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				p, timeout := pkgs[name], suiteTimeout
				if name == "regression" {
					timeout = regressionTimeout
				}
				res := runKCPTests(t, s, bins.tree, p, bins.get(t, p), logDir, name, timeout)
				t.Logf("carried race kcp, %s: %s", name, res.Summary())
				expectAllPassed(t, p, res)
			})
		}
		expectAliveAndReady(t, s)
	})
	logRSS(t, s)
	judgeCarried(t, dir, stopAndReadRaces(t, s, dir))
}

// stockBurst bounds the positive control's load: a few wildcard
// partial-metadata listers for a few seconds.
const (
	stockBurstListers   = 4
	stockBurstDuration  = 5 * time.Second
	stockBurstPerLister = 200
)

// TestRealKCPRaceStock is the positive control: the stock race build, under
// a short burst of concurrent wildcard partial-metadata LISTs of
// ClusterRoles from the watch cache, writes a race report naming
// setKCPOriginalAPIVersionAnnotation. The verdict reads the report file, not
// kcp's exit, so it holds whether or not kcp also died; the test says which.
func TestRealKCPRaceStock(t *testing.T) {
	bin := raceKCPBinary(t, "pristine")
	dir := raceLogDir(t)
	s := servertest.StartKCP(t, server.KCPOptions{Binary: bin, RootDir: t.TempDir(), Env: raceEnv(dir), ReadyTimeout: raceReadyTimeout})
	checkVersionStamp(t, s)

	hc, err := rest.HTTPClientFor(s.ClusterConfig("*"))
	if err != nil {
		t.Fatal(err)
	}
	url := s.ClusterConfig("*").Host + "/apis/rbac.authorization.k8s.io/v1/clusterroles?resourceVersion=0"
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	deadline := time.Now().Add(stockBurstDuration)
	var wg sync.WaitGroup
	for range stockBurstListers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < stockBurstPerLister && time.Now().Before(deadline); i++ {
				select {
				case <-s.Done():
					return
				default:
				}
				if err := partialList(hc, url); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	t.Logf("burst: %d listers, %d LISTs answered, %d failed (first error: %v)", stockBurstListers, ok.Load(), failed.Load(), firstErr.Load())
	died := s.Died()
	how := "stock race kcp still running after the burst"
	if died {
		how = "stock race kcp died during the burst"
		if f := s.Fatal(); f != nil {
			line, _, _ := strings.Cut(f.String(), "\n")
			how += ": " + line
		}
	}
	reps := stopAndReadRaces(t, s, dir)
	named := reportsOnTheBug(reps)
	if len(named) == 0 {
		t.Fatalf("positive control: no race report names setKCPOriginalAPIVersionAnnotation (%d report(s) in %s; %s)", len(reps), dir, how)
	}
	onCarry := 0
	for _, r := range reps {
		if r.InPackages(racereport.CarryPackages...) {
			onCarry++
		}
	}
	t.Logf("positive control: %d of %d race report(s) name setKCPOriginalAPIVersionAnnotation, %d on the handlers or the watch cache; %s. The first:\n%s", len(named), len(reps), onCarry, how, named[0].Text)
	writeFindings(t, dir, reps)
}

// reportsOnTheBug are the reports of reps with a frame in
// setKCPOriginalAPIVersionAnnotation: the write into the watch cache's
// objects that the stock positive controls must show.
func reportsOnTheBug(reps []racereport.Report) []racereport.Report {
	var named []racereport.Report
	for _, r := range reps {
		if r.HasFrame("setKCPOriginalAPIVersionAnnotation") {
			named = append(named, r)
		}
	}
	return named
}

// partialList sends one wildcard partial-metadata LIST.
func partialList(hc *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", partialmeta.ListAccept(partialmeta.V1))
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		line, _, _ := strings.Cut(string(body), "\n")
		return fmt.Errorf("%s: %s", resp.Status, line)
	}
	return nil
}

// logRSS logs kcp's resident memory (VmRSS and VmHWM), the cost of the race
// detector docs/races.md records.
func logRSS(t *testing.T, s *server.KCP) {
	t.Helper()
	rss, err := server.ReadRSS(s.PID())
	if err != nil {
		t.Logf("kcp memory: %v", err)
		return
	}
	t.Logf("kcp memory: %s", rss)
}
