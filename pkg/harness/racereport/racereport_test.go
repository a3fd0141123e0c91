package racereport_test

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/harness/racereport"
)

// runRacy builds testdata/racy with -race and runs it with GORACE set as the
// suite sets it for kcp (racereport.Env): the reports land in dir/race.<pid>
// and do not stop the program. It returns dir and the program's stderr.
func runRacy(t *testing.T) (string, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a -race binary; skipped with -short")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "racy")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-race", "-o", bin, ".")
	build.Dir = filepath.Join("testdata", "racy")
	build.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -race testdata/racy: %v\n%s", err, out)
	}
	dir := filepath.Join(tmp, "race")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run := exec.CommandContext(ctx, bin)
	run.Env = append(os.Environ(), racereport.Env(dir))
	var stderr strings.Builder
	run.Stderr = &stderr
	err := run.Run()
	// The race runtime exits 66 when it reported a race, after the program
	// ran to its end (halt_on_error=0).
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 66 {
		t.Fatalf("racy: %v, want exit status 66; stderr:\n%s", err, stderr.String())
	}
	return dir, stderr.String()
}

func TestParseDirRealReports(t *testing.T) {
	dir, stderr := runRacy(t)
	if strings.Contains(stderr, "DATA RACE") {
		t.Errorf("log_path did not take the reports off stderr:\n%s", stderr)
	}
	reps, files, err := racereport.ParseDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || !strings.HasPrefix(filepath.Base(files[0]), "race.") {
		t.Fatalf("files %v, want one race.<pid>", files)
	}
	// The map race is reported once or twice (the map's header and its
	// slot), the counter once: two groups.
	gs := racereport.GroupByKey(reps)
	if len(gs) != 2 {
		t.Fatalf("%d groups of %d reports, want 2 (the map, the counter):\n%+v", len(gs), len(reps), gs)
	}
	keys := map[string]bool{}
	for _, g := range gs {
		keys[g.Key] = true
	}
	for _, want := range []string{"main.readAnnotation <-> main.setAnnotation", "main.main.func3 <-> main.main.func3"} {
		if !keys[want] {
			t.Errorf("groups %v lack %q", keys, want)
		}
	}
	var mapRace *racereport.Report
	for i := range reps {
		if reps[i].HasFrame("main.setAnnotation") {
			mapRace = &reps[i]
		}
	}
	if mapRace == nil {
		t.Fatalf("no report names main.setAnnotation:\n%s", reps[0].Text)
	}
	if len(mapRace.Accesses) != 2 {
		t.Fatalf("%d accesses, want 2:\n%s", len(mapRace.Accesses), mapRace.Text)
	}
	ops := mapRace.Accesses[0].Op + "/" + mapRace.Accesses[1].Op
	if ops != "Write/Previous read" && ops != "Read/Previous write" {
		t.Errorf("accesses %s, want a write and a read", ops)
	}
	for _, a := range mapRace.Accesses {
		if len(a.Frames) == 0 || a.Frames[0].File == "" || a.Frames[0].Line == 0 {
			t.Errorf("access %s: frames %v lack file:line", a.Op, a.Frames)
		}
		if !strings.HasPrefix(a.Goroutine, "goroutine ") {
			t.Errorf("access %s by %q", a.Op, a.Goroutine)
		}
	}
	if !mapRace.InPackages("main") || mapRace.InPackages(racereport.CarryPackages...) {
		t.Errorf("InPackages: main %t, carry packages %t", mapRace.InPackages("main"), mapRace.InPackages(racereport.CarryPackages...))
	}
	if strings.Contains(mapRace.Text, "==================") || !strings.HasPrefix(mapRace.Text, "WARNING: DATA RACE") {
		t.Errorf("report text:\n%s", mapRace.Text)
	}
}

func TestParseCutReport(t *testing.T) {
	// A process killed while writing: no closing separator, a stack cut short.
	reps := racereport.ParseString("noise\n==================\nWARNING: DATA RACE\nWrite at 0x00c0000a0000 by goroutine 7:\n  pkg.f()\n      /x/f.go:3 +0x1\n")
	if len(reps) != 1 || len(reps[0].Accesses) != 1 || reps[0].Accesses[0].Top() != "pkg.f" || reps[0].Key() != "pkg.f" {
		t.Fatalf("got %+v", reps)
	}
	if n := len(racereport.ParseString("no report here\n==================\n")); n != 0 {
		t.Errorf("%d reports in text without one", n)
	}
}

// A race in a generic type's method: the key shows its type arguments as
// [...], as the shape hashes the runtime prints change from build to build.
// The frames are those of the race the race phase found in kcp v0.32.3
// (docs/races.md), abridged.
func TestKeyOfGenericMethod(t *testing.T) {
	const report = `==================
WARNING: DATA RACE
Write at 0x00c00305b568 by goroutine 41679:
  github.com/kcp-dev/kcp/pkg/informer.(*GenericDiscoveringDynamicSharedInformerFactory[go.shape.b6e8,go.shape.interface { ByCluster(github.com/kcp-dev/logicalcluster/v3.Name) k8s.io/client-go/tools/cache.GenericLister }]).updateInformers()
      /kcp/pkg/informer/informer.go:706 +0x19c9

Previous read at 0x00c00305b568 by goroutine 41723:
  github.com/kcp-dev/kcp/pkg/informer.(*restMapper).RESTMapping()
      <autogenerated>:1 +0x73
  k8s.io/kubernetes/pkg/controller/garbagecollector.(*GarbageCollector).apiResource()
      /k8s/pkg/controller/garbagecollector/operations.go:45 +0x202
==================
`
	reps := racereport.ParseString(report)
	if len(reps) != 1 {
		t.Fatalf("%d reports, want 1", len(reps))
	}
	const want = "github.com/kcp-dev/kcp/pkg/informer.(*GenericDiscoveringDynamicSharedInformerFactory[...]).updateInformers <-> github.com/kcp-dev/kcp/pkg/informer.(*restMapper).RESTMapping"
	if got := reps[0].Key(); got != want {
		t.Errorf("Key() = %q, want %q", got, want)
	}
}

func TestKnown(t *testing.T) {
	p := filepath.Join(t.TempDir(), "known")
	if err := os.WriteFile(p, []byte("# races written up\n\na.f <-> b.g # docs/races.md#one\nc.h <-> d.i # docs/races.md#two # fixed-by: kcp-patches/2-fix\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := racereport.LoadKnown(p)
	if err != nil {
		t.Fatal(err)
	}
	want := racereport.Known{
		"a.f <-> b.g": {Where: "docs/races.md#one"},
		"c.h <-> d.i": {Where: "docs/races.md#two", FixedBy: "kcp-patches/2-fix"},
	}
	if !maps.Equal(k, want) {
		t.Errorf("LoadKnown = %v, want %v", k, want)
	}
	if got := k.Fixes(); !slices.Equal(got, []string{"kcp-patches/2-fix"}) {
		t.Errorf("Fixes() = %q", got)
	}
	gs := []racereport.Group{{Key: "a.f <-> b.g"}, {Key: "c.h <-> c.h"}}
	known, unknown := k.Split(gs)
	if len(known) != 1 || known[0].Key != "a.f <-> b.g" || len(unknown) != 1 || unknown[0].Key != "c.h <-> c.h" {
		t.Errorf("known %v, unknown %v", known, unknown)
	}
	for line, want := range map[string]string{
		"just a function\n":                      p + ":1",
		"a.f <-> b.g\nc.h <-> d.i # fixed-by:\n": p + ":2: fixed-by: names no kcp-patches directory",
	} {
		if err := os.WriteFile(p, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := racereport.LoadKnown(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadKnown of %q: %v, want an error naming %s", line, err, want)
		}
	}
}

// raceBetween is a report of a race between the functions a and b.
func raceBetween(a, b string) string {
	return "==================\nWARNING: DATA RACE\nWrite at 0x00c0000a0000 by goroutine 7:\n  " + a + "()\n      /x/a.go:3 +0x1\n\n" +
		"Previous read at 0x00c0000a0000 by goroutine 8:\n  " + b + "()\n      /x/b.go:5 +0x1\n==================\n"
}

// A known race is judged known on a build without the patch that fixes
// it, and fixed (a failure) on a build that carries it; a race no patch
// fixes stays known either way, and one not listed is new.
func TestJudgeFixedBy(t *testing.T) {
	k := racereport.Known{
		"kcp.read <-> kcp.update": {Where: "docs/races.md#informer", FixedBy: "kcp-patches/2-informer"},
		"kcp.a <-> kcp.b":         {Where: "docs/races.md#other"},
	}
	reps := racereport.ParseString(raceBetween("kcp.update", "kcp.read") + raceBetween("kcp.read", "kcp.update") +
		raceBetween("kcp.a", "kcp.b") + raceBetween("kcp.new", "kcp.new") +
		raceBetween("k8s.io/apiserver/pkg/endpoints/handlers.f", "kcp.g"))
	keys := func(gs []racereport.Group) []string {
		var out []string
		for _, g := range gs {
			out = append(out, g.Key)
		}
		return out
	}
	for _, tc := range []struct {
		name               string
		carried            []string
		known, fixed, news []string
	}{
		{name: "stock", known: []string{"kcp.read <-> kcp.update", "kcp.a <-> kcp.b"}, news: []string{"kcp.new <-> kcp.new"}},
		{name: "another patch", carried: []string{"kcp-patches/1-pin-bump"}, known: []string{"kcp.read <-> kcp.update", "kcp.a <-> kcp.b"}, news: []string{"kcp.new <-> kcp.new"}},
		{name: "with the fix", carried: []string{"kcp-patches/1-pin-bump", "kcp-patches/2-informer"}, known: []string{"kcp.a <-> kcp.b"}, fixed: []string{"kcp.read <-> kcp.update"}, news: []string{"kcp.new <-> kcp.new"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := k.Judge(reps, tc.carried)
			if len(v.Reports) != 5 || len(v.OnCarry) != 1 {
				t.Errorf("%d reports, %d on the carry's packages, want 5 and 1", len(v.Reports), len(v.OnCarry))
			}
			if got := keys(v.Known); !slices.Equal(got, tc.known) {
				t.Errorf("known %q, want %q", got, tc.known)
			}
			if got := keys(v.Fixed); !slices.Equal(got, tc.fixed) {
				t.Errorf("fixed %q, want %q", got, tc.fixed)
			}
			if got := keys(v.New); !slices.Equal(got, tc.news) {
				t.Errorf("new %q, want %q", got, tc.news)
			}
		})
	}
}

// The repository's own list must load, and name as fixes only kcp-patches
// directories that exist: the race phase reads it.
func TestRepositoryKnownList(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	k, err := racereport.LoadKnown(filepath.Join(root, "docs", "races.known"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range k.Fixes() {
		if _, err := os.Stat(filepath.Join(root, dir, "series")); err != nil {
			t.Errorf("docs/races.known names fixed-by %s: %v", dir, err)
		}
	}
}
