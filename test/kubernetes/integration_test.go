package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/modcache"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/carry/upstreampatches"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// Environment of TestKubernetesIntegrationDetector.
const (
	// EnvRun turns the test on (make test-k8s-integration sets it).
	EnvRun = "KCP_CARRY_K8S_INTEGRATION"
	// EnvPackages overrides integrationPackages: directories under
	// test/integration, space separated.
	EnvPackages = "KCP_CARRY_K8S_INTEGRATION_PACKAGES"
	// EnvRounds overrides how many times each variant runs (default 2); 0
	// builds only.
	EnvRounds = "KCP_CARRY_K8S_INTEGRATION_ROUNDS"
)

// integrationPackages are the integration tests of k8s.io/kubernetes that
// run: the controllers built on informers (the garbage collector's metadata
// informers, as kcp's), and an apiserver's reads and writes.
var integrationPackages = []string{"garbagecollector", "quota", "namespace", "secrets", "replicaset", "deployment"}

// variant is a build of the integration tests: Kubernetes' own staging
// modules as the proxy serves them, or the upstream pull requests' patched
// client-go and apiserver in a workspace; and which switches are on.
type variant struct {
	Name string `json:"name"`
	// Patches is how many of upstream-patches/kubernetes' patches apply.
	Patches    int  `json:"patches"`
	WatchCache bool `json:"watchCache"`
}

var variants = []variant{
	{Name: "stock client-go", Patches: 0},
	{Name: "client-go comparing on stop", Patches: 1},
	{Name: "client-go comparing on stop, watch cache's switch", Patches: 2, WatchCache: true},
}

// packageRun is one test binary's run.
type packageRun struct {
	Package string        `json:"package"`
	OK      bool          `json:"ok"`
	Wall    time.Duration `json:"wall"`
	CPU     time.Duration `json:"cpu"`
	// MaxRSSKiB is the largest resident set of the binary or of a child it
	// waited for (etcd).
	MaxRSSKiB int64 `json:"maxRSSKiB"`
	// Detectors is how many detectors were made (client-go warns once
	// for each): the watch cache's switch adds one per watch cache.
	Detectors int                   `json:"detectors"`
	Reports   server.CacheMutations `json:"reports"`
	Log       string                `json:"log"`
}

type variantRun struct {
	Variant string        `json:"variant"`
	Round   int           `json:"round"`
	Runs    []*packageRun `json:"runs"`
}

func (v *variantRun) totals() (wall, cpu time.Duration, maxRSS int64, failed []string, reports, detectors int) {
	for _, r := range v.Runs {
		detectors += r.Detectors
		wall += r.Wall
		cpu += r.CPU
		maxRSS = max(maxRSS, r.MaxRSSKiB)
		if !r.OK {
			failed = append(failed, r.Package)
		}
		reports += len(r.Reports.Reports)
	}
	return
}

// TestKubernetesIntegrationDetector (make test-k8s-integration): the cost
// of the mutation detectors on Kubernetes' own integration tests, as
// kubernetes/kubernetes' hack/make-rules/test-integration.sh runs them
// (KUBE_CACHE_MUTATION_DETECTOR=true): k8s.io/kubernetes at the release of
// upstream-patches/kubernetes' base, built three ways (variants), each
// package run alone with etcd built from go.etcd.io/etcd/server/v3, the
// variants alternating for EnvRounds rounds. Every test must pass and no
// detector may report; a report is a finding, kept with its diff. Records
// in .build/k8s-integration/.
func TestKubernetesIntegrationDetector(t *testing.T) {
	if testing.Short() || os.Getenv(EnvRun) == "" {
		t.Skipf("Kubernetes' integration tests: set %s=1, without -short (make test-k8s-integration)", EnvRun)
	}
	pkgs := integrationPackages
	if v := os.Getenv(EnvPackages); v != "" {
		pkgs = strings.Fields(v)
	}
	rounds := 2
	if v := os.Getenv(EnvRounds); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("%s=%s: want a number of rounds, 0 to build only", EnvRounds, v)
		}
		rounds = n
	}
	ctx := context.Background()
	root := testfs.RepoRoot(t)
	work := filepath.Join(root, ".build", "k8s-integration")
	pr, err := upstreampatches.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	k8s := kubernetesSource(t, ctx, pr, filepath.Join(work, "kubernetes"))
	srcRoot := trimpathRoot(t, work, k8s)
	etcd := buildEtcd(t, k8s, filepath.Join(work, "bin"))
	t.Logf("etcd: %s", etcd)

	bins := map[string]map[string]string{}
	for _, v := range variants {
		goWork := writeVariantWork(t, ctx, pr, work, k8s, v)
		began := time.Now()
		bins[v.Name] = compileIntegration(t, k8s, goWork, filepath.Join(work, "tests", slug(v.Name)), pkgs)
		t.Logf("%s: go test -c of %d packages in %s", v.Name, len(pkgs), time.Since(began).Round(time.Second))
	}

	var all []*variantRun
	t.Cleanup(func() {
		data, err := json.MarshalIndent(all, "", "  ")
		if err == nil {
			err = os.WriteFile(filepath.Join(work, "result.json"), data, 0o644)
		}
		if err != nil {
			t.Errorf("writing the record: %v", err)
		}
		t.Logf("record: %s\n%s", filepath.Join(work, "result.json"), integrationTable(all))
	})
	for round := 1; round <= rounds; round++ {
		// Each package's detectors in this round without the watch
		// cache's switch: the switch must add some.
		informersOnly := map[string]int{}
		for _, v := range variants {
			vr := &variantRun{Variant: v.Name, Round: round}
			for _, p := range pkgs {
				r := runIntegration(t, ctx, bins[v.Name][p], filepath.Join(k8s, "test", "integration", filepath.FromSlash(p)), filepath.Dir(etcd), srcRoot,
					filepath.Join(work, "logs", fmt.Sprintf("%s-%d", slug(v.Name), round), slug(p)+".log"), v)
				r.Package = p
				vr.Runs = append(vr.Runs, r)
				t.Logf("round %d, %s, %s: ok %v, %s wall, %s CPU, max RSS %d MiB, %d detectors, %d report(s)", round, v.Name, p, r.OK, r.Wall.Round(time.Second), r.CPU.Round(time.Second), r.MaxRSSKiB>>10, r.Detectors, len(r.Reports.Reports))
				if !r.OK {
					t.Errorf("%s, %s failed: %s", v.Name, p, r.Log)
				}
				// The switch's own check: the watch caches got detectors
				// the informers' switch alone does not make.
				if prev, ok := informersOnly[p]; v.WatchCache && ok && r.Detectors <= prev {
					t.Errorf("%s, %s: %d detectors, no more than %d without the watch cache's switch", v.Name, p, r.Detectors, prev)
				} else if !v.WatchCache {
					informersOnly[p] = r.Detectors
				}
				for _, m := range r.Reports.Reports {
					t.Errorf("%s, %s: the detector reported %s[%d] %q: now %q, stored %q (%s)", v.Name, p, m.Cache, m.Index, m.Object, m.Now, m.Stored, r.Log)
				}
			}
			all = append(all, vr)
		}
	}
}

// kubernetesSource extracts k8s.io/kubernetes at the release of pr's base
// (client-go v0.X.Y is Kubernetes v1.X.Y) into dir without its vendor
// directory, its go.mod requiring the staging modules at that release from
// the proxy instead of its ./staging directories, which the module's zip
// does not hold.
func kubernetesSource(t *testing.T, ctx context.Context, pr *upstreampatches.PR, dir string) string {
	t.Helper()
	staging := pr.Base[0].Version.Version
	release := module.Version{Path: "k8s.io/kubernetes", Version: "v1." + strings.TrimPrefix(staging, "v0.")}
	if !strings.HasPrefix(staging, "v0.") {
		t.Fatalf("%s: %s is not a staging module's v0.X.Y", filepath.Join(pr.Dir, upstreampatches.BaseFile), pr.Base[0])
	}
	outside := t.TempDir()
	d, err := modcache.Fetch(ctx, outside, release)
	if err != nil {
		t.Fatalf("fetching %s@%s: %v", release.Path, release.Version, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := modcache.Extract(dir, release, d.Zip); err != nil {
		t.Fatal(err)
	}
	// Its vendor directory is the release's, staging modules included:
	// the builds here take modules from the proxy and the workspaces.
	if err := os.RemoveAll(filepath.Join(dir, "vendor")); err != nil {
		t.Fatal(err)
	}
	gomod := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(gomod, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range slices.Clone(f.Replace) {
		if !strings.HasPrefix(r.New.Path, "./staging/") {
			continue
		}
		// DropReplace zeroes the Replace r points to.
		path := r.Old.Path
		if err := f.DropReplace(path, r.Old.Version); err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(f.Require, func(req *modfile.Require) bool { return req.Mod.Path == path }) {
			if err := f.AddRequire(path, staging); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.Cleanup()
	out, err := f.Format()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gomod, out, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s@%s in %s, staging modules at %s", release.Path, release.Version, dir, staging)
	return dir
}

// trimpathRoot makes work/srcroot/k8s.io/kubernetes a link to k8s: the test
// servers find their package's files from its source path, which -trimpath
// (every build here has it) makes k8s.io/kubernetes/...; they join it to
// TEST_SRCDIR and TEST_WORKSPACE, as under Bazel.
func trimpathRoot(t *testing.T, work, k8s string) string {
	t.Helper()
	root := filepath.Join(work, "srcroot")
	link := filepath.Join(root, "k8s.io", "kubernetes")
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(k8s, link); err != nil {
		t.Fatal(err)
	}
	return root
}

// etcdMain is the etcd the integration framework looks up on PATH:
// go.etcd.io/etcd/server/v3's etcdmain, at the version Kubernetes requires.
const etcdMain = `package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
`

func buildEtcd(t *testing.T, k8s, binDir string) string {
	t.Helper()
	dir := filepath.Join(k8s, "carryetcd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(etcdMain), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(binDir, "etcd")
	// -mod=mod writes the go.sum lines of the staging modules' releases,
	// which the workspaces' builds read too.
	goCmd(t, k8s, "off", "build", "-mod=mod", "-o", bin, "./carryetcd")
	return bin
}

// writeVariantWork returns the GOWORK of v: "off" for Kubernetes' own
// release, else a go.work using the Kubernetes tree and client-go and
// k8s.io/apiserver with v.Patches of pr's patches applied.
func writeVariantWork(t *testing.T, ctx context.Context, pr *upstreampatches.PR, work, k8s string, v variant) string {
	t.Helper()
	if v.Patches == 0 {
		return "off"
	}
	if v.Patches > len(pr.Series.Patches) {
		t.Fatalf("%s: %d patches wanted, %s has %d", v.Name, v.Patches, pr.Dir, len(pr.Series.Patches))
	}
	part := *pr
	part.Series = &series.Series{Dir: pr.Series.Dir, Patches: pr.Series.Patches[:v.Patches]}
	dir := filepath.Join(work, "staging", slug(v.Name))
	if _, err := upstreampatches.ApplyToCopy(ctx, &part, dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(k8s, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax(filepath.Join(k8s, "go.mod"), data, nil)
	if err != nil || f.Go == nil {
		t.Fatalf("%s: no go version (%v)", filepath.Join(k8s, "go.mod"), err)
	}
	wf := &modfile.WorkFile{Syntax: &modfile.FileSyntax{}}
	if err := wf.AddGoStmt(f.Go.Version); err != nil {
		t.Fatal(err)
	}
	uses := []string{k8s}
	for _, m := range pr.Base {
		uses = append(uses, filepath.Join(dir, filepath.FromSlash(m.StagingDir())))
	}
	for _, u := range uses {
		if err := wf.AddUse(u, ""); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(work, slug(v.Name)+".work")
	if err := os.WriteFile(file, modfile.Format(wf.Syntax), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// compileIntegration builds each package's test binary into out. The
// variant without a workspace builds first.
func compileIntegration(t *testing.T, k8s, goWork, out string, pkgs []string) map[string]string {
	t.Helper()
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"test", "-c", "-o", out + string(filepath.Separator)}
	if goWork == "off" {
		// The go.sum lines of the staging modules' releases; a workspace
		// reads them from here (it takes no -mod).
		args = append(args, "-mod=mod")
	}
	bins := map[string]string{}
	for _, p := range pkgs {
		args = append(args, "./test/integration/"+p)
		bins[p] = filepath.Join(out, filepath.Base(p)+".test")
	}
	goCmd(t, k8s, goWork, args...)
	return bins
}

func goCmd(t *testing.T, dir, goWork string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK="+goWork)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s in %s (GOWORK=%s): %v\n%s", strings.Join(args, " "), dir, goWork, err, out)
	}
}

// runIntegration runs one test binary in its package's directory with the
// switches of v and etcd on PATH, and reads its usage from wait4.
func runIntegration(t *testing.T, ctx context.Context, bin, pkgDir, etcdDir, srcRoot, logFile string, v variant) *packageRun {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(logFile), 0o755); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, bin, "-test.count=1", "-test.timeout=60m")
	cmd.Dir = pkgDir
	cmd.Env = append(os.Environ(), "PATH="+etcdDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, "TEST_SRCDIR="+srcRoot, "TEST_WORKSPACE=.")
	cmd.Env = append(cmd.Env, server.CacheMutationDetectorEnv(true, v.WatchCache)...)
	cmd.Stdout, cmd.Stderr = log, log
	began := time.Now()
	runErr := cmd.Run()
	r := &packageRun{OK: runErr == nil, Wall: time.Since(began), Log: logFile}
	if cmd.ProcessState == nil {
		t.Fatalf("%s: %v", bin, runErr)
	}
	r.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.MaxRSSKiB = ru.Maxrss
	}
	out, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	r.Reports = server.ParseCacheMutations(string(out))
	r.Detectors = strings.Count(string(out), detectorWarning)
	return r
}

// detectorWarning is what client-go logs as it makes a detector.
const detectorWarning = "Mutation detector is enabled, this will result in memory leakage."

func slug(s string) string {
	return strings.Trim(strings.NewReplacer(" ", "-", ",", "", "'", "", "/", "-").Replace(s), "-")
}

// integrationTable sums each variant's packages per round, with the ratio
// to the first variant in the same round, and the ratio of a variant's
// rounds (the noise).
func integrationTable(all []*variantRun) string {
	var b strings.Builder
	b.WriteString("| round | variant | wall | CPU | max RSS | × wall | × CPU | × RSS | failed | detectors | reports |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	base := map[int]*variantRun{}
	for _, vr := range all {
		if base[vr.Round] == nil {
			base[vr.Round] = vr
		}
		w, c, m, failed, reports, detectors := vr.totals()
		bw, bc, bm, _, _, _ := base[vr.Round].totals()
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %d MiB | %.2f | %.2f | %.2f | %s | %d | %d |\n", vr.Round, vr.Variant,
			w.Round(time.Second), c.Round(time.Second), m>>10, ratio(float64(w), float64(bw)), ratio(float64(c), float64(bc)), ratio(float64(m), float64(bm)), strings.Join(failed, " "), detectors, reports)
	}
	return b.String()
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
