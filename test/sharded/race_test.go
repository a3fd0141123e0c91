package sharded

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/internal/testkcp"
	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcpbuild"
	"github.com/kcp-carry/kcp-carry/pkg/harness/racereport"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server/servertest"
	"github.com/kcp-carry/kcp-carry/pkg/util/atomicfile"
)

// envRace runs TestShardedKCPRaceCarried (`make test-sharded RACE=1`): the
// race builds take minutes to build and several times the memory, so the
// test runs only when asked for.
const envRace = "KCP_CARRY_SHARDED_RACE"

// raceReadyTimeout bounds each race-built server's start.
const raceReadyTimeout = 8 * time.Minute

// TestShardedKCPRaceCarried: the carried topology built with -race (both
// shards, the cache server, the virtual workspaces and the front-proxy, from
// bin/race), under TestShardedKCPPatched's load and checks, with GORACE
// writing each server's reports to a file: no report on the handlers or the
// watch cache, and none not already written up in docs/races.md.
func TestShardedKCPRaceCarried(t *testing.T) {
	if os.Getenv(envRace) != "1" {
		t.Skipf("the sharded race builds run with `make test-sharded RACE=1` (%s=1)", envRace)
	}
	root := testfs.RepoRoot(t)
	bins := server.TopologyBinariesIn(filepath.Join(root, "bin", "race"), "")
	c, err := carryset.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	carried := c.Paths()
	for _, bin := range bins.All() {
		got, err := kcpbuild.Variant(bin, carried)
		if err != nil {
			t.Fatalf("%v: run `make test-sharded RACE=1 KCP_SOURCE=...`", err)
		}
		race, err := kcpbuild.RaceBuild(bin)
		if err != nil {
			t.Fatal(err)
		}
		if got != "patched" || !race {
			t.Fatalf("%s is a %s build with -race=%t, want the carried race build", bin, got, race)
		}
	}
	dir := filepath.Join(root, ".build", "race", t.Name())
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(append([]string{}, serverEnv...), racereport.Env(dir))
	began := time.Now()
	topo := servertest.StartTopology(t, server.TopologyOptions{Binaries: bins, Dir: t.TempDir(), Env: env, ReadyTimeout: raceReadyTimeout})
	runCarried(t, topo, began)
	for _, c := range topo.Components() {
		if rss, err := server.ReadRSS(c.PID()); err == nil {
			t.Logf("%s: %s", c.Name, rss)
		}
	}
	if err := topo.Stop(); err != nil {
		t.Logf("stopping the topology: %v", err) // a race build that reported exits 66
	}
	reps, files, err := racereport.ParseDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	known, err := racereport.LoadKnown(filepath.Join(root, "docs", "races.known"))
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	racereport.Markdown(&md, racereport.GroupByKey(reps))
	if err := atomicfile.Write(filepath.Join(dir, "findings.md"), md.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	v := known.Judge(reps, testkcp.CarriedFixes(t, root, os.Getenv(envKCPSource), known))
	t.Logf("carried sharded race builds: %d race report(s) in %d file(s) (%s), %d on the handlers or the watch cache, %d known group(s), %d fixed by a kcp patch the builds carry, %d new",
		len(reps), len(files), strings.Join(baseNames(files), ", "), len(v.OnCarry), len(v.Known), len(v.Fixed), len(v.New))
	for _, r := range v.OnCarry {
		t.Errorf("a race on the handlers or the watch cache (%s, %s):\n%s", r.Key(), r.Source, r.Text)
	}
	for _, g := range v.Known {
		t.Logf("known race: %s, %d report(s)", g.Key, len(g.Reports))
	}
	for _, g := range v.Fixed {
		t.Errorf("a race %s fixes, on builds from %s, which carries it: %s, %d report(s); the first (%s):\n%s", known[g.Key].FixedBy, os.Getenv(envKCPSource), g.Key, len(g.Reports), g.Reports[0].Source, g.Reports[0].Text)
	}
	for _, g := range v.New {
		t.Errorf("a race not written up in docs/races.md: %s, %d report(s); the first (%s):\n%s", g.Key, len(g.Reports), g.Reports[0].Source, g.Reports[0].Text)
	}
}

func baseNames(files []string) []string {
	var out []string
	for _, f := range files {
		out = append(out, filepath.Base(f))
	}
	return out
}
