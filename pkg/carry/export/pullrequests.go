package export

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcppatches"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/carry/upstreampatches"
	"github.com/kcp-carry/kcp-carry/pkg/carry/verify"
)

// The upstream repositories the export writes pull requests for.
const (
	UpstreamFork       = "github.com/kcp-dev/kubernetes"
	UpstreamKCP        = "github.com/kcp-dev/kcp"
	UpstreamKubernetes = "github.com/kubernetes/kubernetes"
)

// The -timeout each upstream's CI gives a presubmit check.
const (
	// KubernetesUnitTimeout is KUBE_TIMEOUT's default in Kubernetes'
	// hack/make-rules/test.sh, which its unit job runs (KUBE_RACE=-race),
	// and so does the fork, a Kubernetes tree.
	KubernetesUnitTimeout = 180 * time.Second
	// KCPUnitTimeout: kcp's make test gives go test no -timeout, so it is
	// go test's default.
	KCPUnitTimeout = 10 * time.Minute
	// KCPE2ETimeout is the -timeout of the e2e check's TEST_ARGS.
	KCPE2ETimeout = 60 * time.Minute
)

// KCPE2ETarget is kcp's make target the e2e checks run: kcp's shared e2e
// server with the minimal set of controllers.
const KCPE2ETarget = "test-e2e-shared-minimal"

// PullRequest is one pull request the export writes, whatever its upstream.
// The export writes, checks, renders and presubmits every pull request in
// one loop over the list (PullRequests); a new pull request is a new value
// (a directory of patches and a template), never a new branch of Run.
type PullRequest struct {
	// Name names it everywhere (carry presubmit --only, the report, the
	// table): its directory in --out, or kcp-dev-kubernetes for the fork's
	// fix, written at the top of --out.
	Name string
	// Upstream is its repository (UpstreamFork, UpstreamKCP,
	// UpstreamKubernetes) and Base what it is cut on there: the fork's pin
	// commit, kcp main or a kcp release branch, the Kubernetes modules.
	Upstream, Base string
	// Dir is its directory relative to --out ("" for the top).
	Dir string
	// Patches are its patches, in order; none for a pin bump that kcp's own
	// script makes.
	Patches []PRPatch
	// Template is its text's template; "" when its text is another pull
	// request's (a backport's is its pull request's).
	Template string
	// After are the pull requests it merges after, by Name.
	After []string
	// Fix says that it changes code and the tests of that code: its tests
	// must fail without its other changes.
	Fix bool
	// Presubmit are the checks its upstream's CI runs for the files it
	// touches, as that CI runs them.
	Presubmit []Check

	kind prKind
}

// PRPatch is one patch of a pull request.
type PRPatch struct {
	// Module is the carried module a fork patch changes ("" for the
	// others), and Dir the directory of the upstream repository its paths
	// are relative to ("" for the root).
	Module, Dir string
	*series.Patch
}

// Files are the repository paths the patch changes.
func (p PRPatch) Files() []string {
	var out []string
	for _, f := range changedPaths(p.Patch.Files) {
		out = append(out, path.Join(p.Dir, f))
	}
	return out
}

// TextFile is the text (relative to --out) that speaks for the pull
// request: its own, or, for a backport, its pull request's.
func (pr *PullRequest) TextFile() string {
	if k, ok := pr.kind.(*kcpPRKind); ok && k.branch != "" {
		return path.Join(path.Dir(pr.Dir), PRFile)
	}
	return path.Join(pr.Dir, PRFile)
}

// Check is one presubmit check: a command run in the pull request's tree.
type Check struct {
	// Name is what it is: "go test -race", "go vet" or "e2e".
	Name string `json:"name"`
	// Dir is where it runs, relative to the tree; Command the command.
	Dir     string   `json:"dir,omitempty"`
	Command []string `json:"command"`
	// Timeout is the -timeout its upstream's job gives it; 0 for none.
	Timeout Duration `json:"timeout,omitempty"`
	// Workspace runs it in the tree's go.work (GOWORK=<tree>/go.work);
	// otherwise GOWORK=off, with the tree's own go.mod.
	Workspace bool `json:"workspace,omitempty"`
	// Tests says that it runs the pull request's tests: for a fix it runs
	// again without the pull request's other changes, and must fail.
	Tests bool `json:"tests,omitempty"`
	// E2E says that it needs kcp as it is after the whole series: a tree
	// with every kcp pull request and the carry's overlay.
	E2E bool `json:"e2e,omitempty"`
}

// String is the check as one runs it by hand.
func (c Check) String() string {
	var args []string
	for _, a := range c.Command {
		if strings.ContainsAny(a, " ^|$()*'\"") {
			a = "'" + a + "'"
		}
		args = append(args, a)
	}
	cmd := strings.Join(args, " ")
	if c.Dir != "" {
		cmd = "cd " + c.Dir + " && " + cmd
	}
	return cmd
}

// Duration is a time.Duration that reads and writes as "3m0s" in JSON.
type Duration time.Duration

func (d Duration) String() string               { return time.Duration(d).String() }
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// prKind is what differs between the upstreams: how a pull request is
// written into --out, how its text is rendered, and how its tree is
// prepared for its presubmit.
type prKind interface {
	write(ctx context.Context, st *exportState, pr *PullRequest) error
	render(d prData, st *exportState, pr *PullRequest) (prTexts, error)
	prepare(ctx context.Context, env *presubmitEnv, pr *PullRequest, dst string, mode prepareMode) error
}

// prepareMode is the tree a presubmit needs.
type prepareMode int

const (
	// withPR: the base with the series up to and including the pull
	// request.
	withPR prepareMode = iota
	// withoutPR: the series before it, and only its _test.go changes.
	withoutPR
	// wholeSeries: kcp after every pull request of the series, and the
	// carry through the overlay (the e2e checks').
	wholeSeries
)

// sources are the three sources of pull requests.
type sources struct {
	root string
	// mods are the carried modules in dependency order, run the verify-run
	// patterns of their packages.
	mods    []*carried
	forkPRs []*forkPR
	run     map[string]string
	kcp     []*kcppatches.PR
	// upstream is upstream-patches/kubernetes, nil for none.
	upstream *upstreampatches.PR
	groups   []upstreamGroup
}

// loadSources reads the fork's pull requests (the carry's series split by
// ForkPRsFile, mods in dependency order), kcp-patches/ (if it exists) and
// upstream-patches/kubernetes (if it exists).
func loadSources(c *carryset.Carry, mods []*carried) (*sources, error) {
	src := &sources{root: c.Root, mods: mods}
	var planned []*exported
	for _, m := range mods {
		for _, p := range m.in.Series.Patches {
			planned = append(planned, &exported{mod: m, carried: p})
		}
	}
	var err error
	if src.forkPRs, err = splitForkPRs(c.PatchesDir, planned); err != nil {
		return nil, err
	}
	if src.run, err = verify.RunPatterns(c); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(c.Root, kcppatches.Dir)); err == nil {
		if src.kcp, err = kcppatches.Load(c.Root); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(c.Root, kcppatches.Dir), err)
		}
	}
	if src.upstream, err = upstreampatches.Load(c.Root); err != nil {
		return nil, err
	}
	if src.upstream != nil {
		if src.groups, err = upstreamGroups(src.upstream); err != nil {
			return nil, err
		}
	}
	return src, nil
}

// ForkFixName is the Name of the fork's fix, the first pull request.
const ForkFixName = "kcp-dev-kubernetes"

// pullRequests is the list, in merge order: the fork's (the fix, then the
// later ones of ForkPRsFile), Kubernetes' (one per patch of
// upstream-patches/kubernetes), kcp's (kcp-patches/ in merge order, each
// followed by its backport forms). Each merges after the ones before it of
// its upstream; a kcp pin bump (<n>-pin-bump, <n>-<fork pull request>-pin-bump)
// after the fork pull request it pins, and a backport after its pull
// request.
func (src *sources) pullRequests() ([]*PullRequest, error) {
	var prs []*PullRequest
	var before []string
	for i, fp := range src.forkPRs {
		name := ForkFixName
		template := "fork-pr.md.tmpl"
		if i > 0 {
			name, template = fp.dir, "fork-pr-"+fp.name+".md.tmpl"
		}
		pr := &PullRequest{
			Name: name, Upstream: UpstreamFork, Base: "pin " + Revision(src.mods[0].in.Fork.Version), Dir: fp.dir,
			Template: template, After: slices.Clone(before), kind: &forkPRKind{src: src, i: i},
		}
		for _, e := range fp.patches {
			pr.Patches = append(pr.Patches, PRPatch{Module: e.mod.in.Module, Dir: e.mod.loc.Dir, Patch: e.carried})
		}
		pr.Presubmit, pr.Fix = src.forkChecks(pr), isFix(pr.Patches)
		prs = append(prs, pr)
		before = append(before, name)
	}
	before = nil
	if up := src.upstream; up != nil {
		for i, g := range src.groups {
			dir, template := UpstreamDir+"-"+path.Base(g.module), "kubernetes-pr-"+path.Base(g.module)+".md.tmpl"
			if i == len(src.groups)-1 {
				dir, template = UpstreamDir, "kubernetes-pr.md.tmpl"
			}
			pr := &PullRequest{
				Name: dir, Upstream: UpstreamKubernetes, Base: upstreamBase(up), Dir: dir, Template: template,
				After: slices.Clone(before), kind: &kubePRKind{src: src, i: i},
			}
			for _, p := range g.patches {
				pr.Patches = append(pr.Patches, PRPatch{Patch: p})
			}
			pr.Presubmit, pr.Fix = kubernetesChecks(up, pr), isFix(pr.Patches)
			prs = append(prs, pr)
			before = append(before, dir)
		}
	}
	before = nil
	for i, kp := range src.kcp {
		dir := path.Join(KCPDir, kp.Name)
		short := strings.SplitN(kp.Name, "-", 2)[1]
		template := "kcp-pr-" + short + ".md.tmpl"
		if _, err := fs.Stat(templates, template); errors.Is(err, fs.ErrNotExist) {
			template = "generic-kcp-pr.md.tmpl"
		}
		after := slices.Clone(before)
		if pinned, ok := strings.CutSuffix(short, "pin-bump"); ok {
			fork := ForkFixName
			if pinned != "" {
				fork = ForkPRDirPrefix + strings.TrimSuffix(pinned, "-")
			}
			if slices.ContainsFunc(prs, func(p *PullRequest) bool { return p.Name == fork }) {
				after = append(after, fork)
			}
		}
		main := &PullRequest{Name: dir, Upstream: UpstreamKCP, Base: "main", Dir: dir, Template: template, After: after,
			kind: &kcpPRKind{src: src, i: i, form: kp.Series}}
		prs = append(prs, kcpValue(main, kp.Series))
		for _, b := range kp.Backports {
			bdir := path.Join(dir, b.Branch)
			prs = append(prs, kcpValue(&PullRequest{Name: bdir, Upstream: UpstreamKCP, Base: b.Branch, Dir: bdir, After: []string{dir},
				kind: &kcpPRKind{src: src, i: i, form: b.Series, branch: b.Branch}}, b.Series))
		}
		before = append(before, dir)
	}
	return prs, nil
}

// upstreamBase names the modules up is cut on, module@version.
func upstreamBase(up *upstreampatches.PR) string {
	var names []string
	for _, m := range up.Base {
		names = append(names, m.String())
	}
	return strings.Join(names, ", ")
}

// kcpValue fills pr's patches, Fix and presubmit from its form s.
func kcpValue(pr *PullRequest, s *series.Series) *PullRequest {
	for _, p := range s.Patches {
		pr.Patches = append(pr.Patches, PRPatch{Patch: p})
	}
	pr.Presubmit = kcpChecks(pr)
	pr.Fix = isFix(pr.Patches)
	return pr
}

// PullRequests is the list of c's pull requests, in merge order. It
// extracts the pristine fork modules into a scratch directory to order the
// carried modules as the export does.
func PullRequests(ctx context.Context, c *carryset.Carry) ([]*PullRequest, error) {
	work, err := os.MkdirTemp("", "carry-pullrequests-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	mods, _, _, err := pristineFork(ctx, c, work)
	if err != nil {
		return nil, err
	}
	src, err := loadSources(c, mods)
	if err != nil {
		return nil, err
	}
	return src.pullRequests()
}

// isFix says whether patches change Go code and Go tests both.
func isFix(patches []PRPatch) bool {
	var code, tests bool
	for _, p := range patches {
		for _, f := range p.Files() {
			if strings.HasSuffix(f, ".go") {
				tests = tests || isTestFile(f)
				code = code || !isTestFile(f)
			}
		}
	}
	return code && tests
}

func isTestFile(name string) bool { return strings.HasSuffix(name, "_test.go") }

// goPackages are the directories of the .go files (relative to dir) that
// patches change, sorted, each once, those keep accepts.
func goPackages(patches []PRPatch, dir string, keep func(pkgDir string) bool) []string {
	seen := map[string]bool{}
	for _, p := range patches {
		for _, f := range p.Files() {
			rel, ok := strings.CutPrefix(f, dir+"/")
			if dir == "" {
				rel, ok = f, true
			}
			if ok && strings.HasSuffix(rel, ".go") && (keep == nil || keep(path.Dir(rel))) {
				seen[path.Dir(rel)] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// forkChecks: `go test -race` of the packages pr touches in each carried
// module, at the fork pin with the fork's series up to pr, in the workspace
// carry verify builds; a package that verify-run names runs only the tests
// it names there, as carry verify does (the fork's own tests of it fail at
// the pin).
func (src *sources) forkChecks(pr *PullRequest) []Check {
	var checks []Check
	for _, m := range src.mods {
		byRun := map[string][]string{}
		for _, dir := range goPackages(pr.Patches, m.loc.Dir, nil) {
			pkg := path.Join(m.in.Module, dir)
			byRun[src.run[pkg]] = append(byRun[src.run[pkg]], pkg)
		}
		for _, run := range slices.Sorted(maps.Keys(byRun)) {
			cmd := []string{"go", "test", "-race", "-count=1", "-timeout=" + Duration(KubernetesUnitTimeout).String()}
			if run != "" {
				cmd = append(cmd, "-run", run)
			}
			checks = append(checks, Check{Name: "go test -race", Command: append(cmd, byRun[run]...),
				Timeout: Duration(KubernetesUnitTimeout), Workspace: true, Tests: true})
		}
	}
	return checks
}

// kubernetesChecks: `go test -race` of the packages pr touches, in each
// staging module's directory, as Kubernetes' unit job runs them
// (KUBE_RACE=-race, KUBE_TIMEOUT), on the base modules in their go.work.
func kubernetesChecks(up *upstreampatches.PR, pr *PullRequest) []Check {
	var checks []Check
	for _, m := range up.Base {
		var pkgs []string
		for _, dir := range goPackages(pr.Patches, m.StagingDir(), nil) {
			pkgs = append(pkgs, "./"+dir+"/")
		}
		if len(pkgs) == 0 {
			continue
		}
		cmd := []string{"go", "test", "-race", "-count=1", "-timeout=" + Duration(KubernetesUnitTimeout).String()}
		checks = append(checks, Check{Name: "go test -race", Dir: m.StagingDir(), Command: append(cmd, pkgs...),
			Timeout: Duration(KubernetesUnitTimeout), Workspace: true, Tests: true})
	}
	return checks
}

// kcpOwnJobs are kcp's test trees that its unit job leaves to jobs of
// their own.
var kcpOwnJobs = []string{"test/e2e", "test/integration"}

// kcpChecks: kcp's unit job (`go test -race`) on the packages pr touches
// outside its e2e and integration trees, `go vet` of every package it
// touches, and, per e2e package whose tests it adds or changes, kcp's own
// e2e target running those tests against kcp after the whole series.
func kcpChecks(pr *PullRequest) []Check {
	var checks []Check
	unit := goPackages(pr.Patches, "", func(dir string) bool {
		return !slices.ContainsFunc(kcpOwnJobs, func(j string) bool { return dir == j || strings.HasPrefix(dir, j+"/") })
	})
	if len(unit) > 0 {
		checks = append(checks, Check{Name: "go test -race", Command: append([]string{"go", "test", "-race", "-count=1"}, dotSlash(unit)...),
			Timeout: Duration(KCPUnitTimeout), Tests: true})
	}
	if all := goPackages(pr.Patches, "", nil); len(all) > 0 {
		checks = append(checks, Check{Name: "go vet", Command: append([]string{"go", "vet"}, dotSlash(all)...)})
	}
	tests := e2eTests(pr.Patches)
	for _, dir := range slices.Sorted(maps.Keys(tests)) {
		checks = append(checks, Check{Name: "e2e", Command: []string{"make", KCPE2ETarget, "WHAT=./" + dir + "/",
			// The recipe puts TEST_ARGS into bash unquoted, after make
			// expands it: the pattern is quoted for bash, its $ doubled.
			`TEST_ARGS=-run "^(` + strings.Join(tests[dir], "|") + `)$$" ` + fmt.Sprintf("-timeout %dm", int(KCPE2ETimeout.Minutes()))},
			Timeout: Duration(KCPE2ETimeout), E2E: true})
	}
	return checks
}

func dotSlash(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		out = append(out, "./"+d+"/")
	}
	return out
}

// e2eTests are the tests, by package directory under test/e2e, that
// patches add or change.
func e2eTests(patches []PRPatch) map[string][]string {
	var ps []*series.Patch
	for _, p := range patches {
		ps = append(ps, p.Patch)
	}
	tests := map[string][]string{}
	for _, t := range series.ChangedTests(ps, "test/e2e/") {
		tests[t.Dir] = append(tests[t.Dir], t.Name)
	}
	for dir := range tests {
		slices.Sort(tests[dir])
	}
	return tests
}
