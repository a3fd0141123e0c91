// Package verify runs the carry's own regression tests the way an upstream
// reviewer bisects a series: the patches are applied to the pristine fork one
// at a time, and after each the packages whose tests the series so far
// changes must pass under -race; before each patch that changes tests, the
// series so far plus only that patch's _test.go changes must fail in the
// packages whose tests it changes (assertion, race report or runtime crash).
// So every patch builds and passes on its own, and every test a patch brings
// fails without the patch's fix. A package named in a module's verify-run
// file (RunFile) runs only the tests named there. Options.NoRace runs the
// same steps without -race, where a failure is an assertion or a runtime
// crash.
package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/gowork"
	"github.com/kcp-carry/kcp-carry/pkg/carry/overlay"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
)

// Options configures Run. Carry (or Root, to load it) is required.
type Options struct {
	// Carry is the carry to verify; nil loads the carry of Root.
	Carry *carryset.Carry
	// Root is the kcp-carry repository.
	Root string
	// Progress receives a line per step. nil discards.
	Progress io.Writer
	// NoRace runs the tests without -race: the -race compile of the tested
	// packages' dependencies is the one a build of kcp does not share, and a
	// carry whose tests fail without it by assertion needs it only for the
	// reports (make test's form; `carry verify` keeps -race).
	NoRace bool
}

// Outcome is one run of the tests.
type Outcome struct {
	Name     string           `json:"name"`
	Packages []PackageOutcome `json:"packages"`
}

// Step is one patch of the series added to the ones before it.
type Step struct {
	Module string `json:"module"`
	Patch  string `json:"patch"`
	// Without is the series before Patch plus only Patch's _test.go changes:
	// it must fail. Nil when Patch changes no test file.
	Without *Outcome `json:"without,omitempty"`
	// With is the series up to and including Patch: it must pass.
	With Outcome `json:"with"`
}

// Report is every step and the verdict.
type Report struct {
	// Race says whether the tests ran under -race.
	Race bool `json:"race"`
	// Series is the dirhash of each carried module's series the tests ran
	// with, so a saved report can be matched to the carry it verified.
	Series   map[string]string `json:"series"`
	Packages []string          `json:"packages"`
	// Run is the go test -run pattern of each package that runs only the
	// tests its module's RunFile names; the others run whole.
	Run   map[string]string `json:"run,omitempty"`
	Steps []Step            `json:"steps"`
	// Problems lists why the carry is not verified; empty means every patch
	// passes the tests on its own and its tests fail without its fix.
	Problems []string `json:"problems,omitempty"`
}

// OK says whether every step holds.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

func isTestFile(p string) bool { return strings.HasSuffix(p, "_test.go") }

// Run verifies the carry.
func Run(ctx context.Context, opts Options) (*Report, error) {
	c := opts.Carry
	var err error
	if c == nil {
		if c, err = carryset.Load(opts.Root); err != nil {
			return nil, err
		}
	}
	if err := c.CheckZipHashes(); err != nil {
		return nil, err
	}
	root := c.Root
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	ins := c.Modules
	carry := c.Series()
	pkgs := TestedPackages(carry)
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("%s: the carry adds or changes no _test.go file, so there is nothing to verify", c.PatchesDir)
	}
	run, err := RunPatterns(c)
	if err != nil {
		return nil, err
	}
	report := &Report{Race: !opts.NoRace, Series: SeriesHashes(carry), Packages: pkgs, Run: run}
	mode := "-race"
	if opts.NoRace {
		mode = "without -race"
	}

	// One tree per module, rebuilt in place for every step, so that Go's
	// build cache keeps what a step did not change.
	work := filepath.Join(root, ".build", "verify")
	goWork := filepath.Join(work, "go.work")
	trees := map[string]string{}
	for _, in := range ins {
		trees[in.Module] = overlay.ModuleDir(filepath.Join(work, "trees"), in.Module)
	}
	if err := WriteGoWork(goWork, root, trees); err != nil {
		return nil, err
	}
	// applied is how many patches of each module a step builds on.
	applied := map[string]int{}
	build := func(mod string, extra *series.Patch, filter func(string) bool) error {
		for _, in := range ins {
			dir := trees[in.Module]
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			if _, err := overlay.BuildTree(ctx, root, in, dir, in.Series.Patches[:applied[in.Module]], nil); err != nil {
				return err
			}
			if in.Module == mod && extra != nil {
				if _, err := extra.Apply(dir, filter); err != nil {
					return fmt.Errorf("%s: %w", in.Module, err)
				}
			}
		}
		return nil
	}
	// A module's patches may use what another carried module's add (the
	// cacher's detector, client-go's constructor): verify each module after
	// the carried modules it requires.
	if err := build("", nil, nil); err != nil {
		return nil, err
	}
	if ins, _, err = carryset.OrderByGoMod(ins,
		func(in *carryset.Carried) string { return in.Module },
		func(in *carryset.Carried) string { return filepath.Join(trees[in.Module], "go.mod") }); err != nil {
		return nil, err
	}
	// tested holds the packages whose tests the patches applied so far
	// change: a package is verified from the patch that first changes its
	// tests on (before, its tests may not even compile on the fork).
	tested := map[string]bool{}
	for _, in := range ins {
		for _, p := range in.Series.Patches {
			step := Step{Module: in.Module, Patch: p.Name}
			own := testedPackages(in.Module, []*series.Patch{p})
			for _, pkg := range own {
				tested[pkg] = true
			}
			if changesTests(p) && !onlyTests(p) {
				if err := build(in.Module, p, isTestFile); err != nil {
					return nil, err
				}
				fmt.Fprintf(progress, "carry verify: %s: the series before %s, with only its tests (%s): must fail\n", in.Module, p.Name, mode)
				without, err := goTest(ctx, root, goWork, fmt.Sprintf("before %s, with its tests", p.Name), own, run, report.Race)
				if err != nil {
					return nil, err
				}
				markMissingNew(&without, p)
				step.Without = &without
			}
			applied[in.Module]++
			if err := build(in.Module, nil, nil); err != nil {
				return nil, err
			}
			step.With = Outcome{Name: "with " + p.Name}
			if len(tested) > 0 {
				fmt.Fprintf(progress, "carry verify: %s: the series up to %s (%s): must pass\n", in.Module, p.Name, mode)
				if step.With, err = goTest(ctx, root, goWork, "with "+p.Name, slices.Sorted(maps.Keys(tested)), run, report.Race); err != nil {
					return nil, err
				}
			}
			report.Steps = append(report.Steps, step)
		}
	}
	report.Problems = judge(report)
	return report, nil
}

// changesTests says whether p adds, changes or deletes a _test.go file.
func changesTests(p *series.Patch) bool {
	return slices.ContainsFunc(p.Files, func(f *gitdiff.File) bool {
		return isTestFile(f.OldName) || isTestFile(f.NewName)
	})
}

// onlyTests says whether p changes nothing but _test.go files: such a patch
// fixes nothing, so there is no "without" to fail (a fix of the tests'
// compilation, say); its tests must still pass with it.
func onlyTests(p *series.Patch) bool {
	return !slices.ContainsFunc(p.Files, func(f *gitdiff.File) bool {
		return !isTestFile(f.OldName) && !isTestFile(f.NewName)
	})
}

// markMissingNew records, for each package of o whose tests did not compile,
// the names p declares that they lack, when that is all they lack.
func markMissingNew(o *Outcome, p *series.Patch) {
	for i := range o.Packages {
		pkg := &o.Packages[i]
		if !pkg.BuildFailed {
			continue
		}
		if missing, ok := series.MissingOnly(pkg.Excerpt, p); ok {
			pkg.MissingNew = missing
		}
	}
}

// judge lists every way the steps fall short of pass-with, fail-without.
func judge(r *Report) []string {
	var problems []string
	for _, s := range r.Steps {
		for _, p := range s.With.Packages {
			switch {
			case p.BuildFailed:
				problems = append(problems, fmt.Sprintf("%s: the tests do not compile with the series up to %s", p.ImportPath, s.Patch))
			case !p.Passed:
				problems = append(problems, fmt.Sprintf("%s: the tests fail with the series up to %s: %s", p.ImportPath, s.Patch, strings.Join(topLevel(p.FailedTests), ", ")))
			}
		}
		if s.Without == nil {
			continue
		}
		for _, p := range s.Without.Packages {
			switch {
			case p.BuildFailed && len(p.MissingNew) == 0:
				problems = append(problems, fmt.Sprintf("%s: the tests of %s do not compile without its fix, for more than the want of what it declares, so they cannot show what it fixes", p.ImportPath, s.Patch))
			case p.Passed:
				problems = append(problems, fmt.Sprintf("%s: the tests of %s pass without its fix: they do not catch what it fixes", p.ImportPath, s.Patch))
			}
		}
	}
	return problems
}

// SeriesHashes maps each carried module to its series hash.
func SeriesHashes(carry map[string]*series.Series) map[string]string {
	hashes := map[string]string{}
	for mod, s := range carry {
		hashes[mod] = s.Hash
	}
	return hashes
}

// TestedPackages lists the import paths of the packages whose _test.go files
// the series (by module path) add or change: what `carry verify` runs.
func TestedPackages(carry map[string]*series.Series) []string {
	var pkgs []string
	for mod, s := range carry {
		pkgs = append(pkgs, testedPackages(mod, s.Patches)...)
	}
	sort.Strings(pkgs)
	return slices.Compact(pkgs)
}

// testedPackages lists, sorted, the import paths of the packages of module
// mod whose _test.go files patches add or change.
func testedPackages(mod string, patches []*series.Patch) []string {
	seen := map[string]bool{}
	for _, p := range patches {
		for _, f := range p.Files {
			name := f.NewName
			if f.IsDelete {
				name = f.OldName
			}
			if isTestFile(name) {
				seen[path.Join(mod, path.Dir(name))] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// RunFile names, next to a module's series, the packages whose tests carry
// verify runs by name instead of whole, where the fork's own tests do not
// pass: one "<package directory in the module> <go test -run pattern>" a
// line, `#` comments and blank lines allowed.
const RunFile = "verify-run"

// RunPatterns reads every carried module's RunFile, if it has one, and maps
// each package it names (import path) to its -run pattern. A package whose
// tests the series does not change, a package named twice and a pattern
// that is not a regular expression are errors naming the line.
func RunPatterns(c *carryset.Carry) (map[string]string, error) {
	run := map[string]string{}
	var errs []error
	for _, in := range c.Modules {
		file := filepath.Join(in.Series.Dir, RunFile)
		data, err := os.ReadFile(file)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		tested := testedPackages(in.Module, in.Series.Patches)
		lines, err := series.Lines(data)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		for _, l := range lines {
			if len(l.Fields) != 2 {
				errs = append(errs, fmt.Errorf("%s:%d: want \"<package directory> <go test -run pattern>\", got %q", file, l.N, strings.Join(l.Fields, " ")))
				continue
			}
			pkg := path.Join(in.Module, l.Fields[0])
			if _, err := regexp.Compile(l.Fields[1]); err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: %w", file, l.N, err))
				continue
			}
			if !slices.Contains(tested, pkg) {
				errs = append(errs, fmt.Errorf("%s:%d: %s: the series changes no test of this package", file, l.N, pkg))
				continue
			}
			if _, twice := run[pkg]; twice {
				errs = append(errs, fmt.Errorf("%s:%d: %s named twice", file, l.N, pkg))
				continue
			}
			run[pkg] = l.Fields[1]
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(run) == 0 {
		return nil, nil
	}
	return run, nil
}

// goTest runs `go test [-race] -count=1 -json` on pkgs in the workspace
// goWork: the packages run names with their -run pattern, one go test for
// each pattern, the others whole.
func goTest(ctx context.Context, root, goWork, name string, pkgs []string, run map[string]string, race bool) (Outcome, error) {
	byPattern := map[string][]string{}
	for _, p := range pkgs {
		byPattern[run[p]] = append(byPattern[run[p]], p)
	}
	out := Outcome{Name: name}
	for _, pattern := range slices.Sorted(maps.Keys(byPattern)) {
		outcomes, err := goTestRun(ctx, root, goWork, byPattern[pattern], pattern, race)
		if err != nil {
			return Outcome{}, err
		}
		out.Packages = append(out.Packages, outcomes...)
	}
	sort.Slice(out.Packages, func(i, j int) bool { return out.Packages[i].ImportPath < out.Packages[j].ImportPath })
	return out, nil
}

// goTestRun runs one go test on pkgs, with -run pattern unless it is empty.
func goTestRun(ctx context.Context, root, goWork string, pkgs []string, pattern string, race bool) ([]PackageOutcome, error) {
	args := []string{"test", "-count=1", "-json"}
	if pattern != "" {
		args = append(args, "-run", pattern)
	}
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOWORK=") }), "GOWORK="+goWork)
	if race {
		// -race needs cgo, whatever the caller's environment says.
		args = append(args, "-race")
		env = append(env, "CGO_ENABLED=1")
	}
	args = append(args, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	outcomes, err := parseTestJSON(&stdout, pkgs)
	if err != nil {
		return nil, fmt.Errorf("reading go test output: %w", err)
	}
	// A failing test run exits 1; anything the JSON does not explain (the go
	// command itself failing) is an error of the run, not a verdict.
	if runErr != nil && len(outcomes) == 0 {
		return nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), runErr, stderr.String())
	}
	for i := range outcomes {
		if outcomes[i].BuildFailed && len(outcomes[i].Excerpt) == 0 {
			outcomes[i].Excerpt = strings.Split(strings.TrimSpace(stderr.String()), "\n")
		}
		outcomes[i].Run = pattern
	}
	return outcomes, nil
}

// WriteGoWork writes a workspace that uses the repository and replaces the
// carried modules by the trees given (module path -> directory): how the
// carry's tests build against a patched fork (carry presubmit's fork trees
// too).
func WriteGoWork(goWork, root string, trees map[string]string) error {
	goVersion, err := gowork.GoVersion(filepath.Join(root, "go.mod"))
	if err != nil {
		return err
	}
	w, err := gowork.New(goWork, goVersion)
	if err != nil {
		return err
	}
	if err := w.AddUse(root); err != nil {
		return err
	}
	mods := slices.Sorted(maps.Keys(trees))
	for _, m := range mods {
		if err := w.AddReplace(m, trees[m]); err != nil {
			return err
		}
	}
	return w.Write()
}

// WriteText prints the report for people: a line per run, the details of
// what failed, and the verdict.
func (r *Report) WriteText(w io.Writer) {
	for _, s := range r.Steps {
		runs := []Outcome{s.With}
		if s.Without != nil {
			runs = []Outcome{*s.Without, s.With}
		}
		for _, o := range runs {
			o.WriteText(w)
		}
	}
	if r.OK() {
		how := ""
		if !r.Race {
			how = " (without -race)"
		}
		fmt.Fprintf(w, "verified%s: each patch passes the tests on its own, and its tests fail without it\n", how)
		return
	}
	fmt.Fprintln(w, "NOT verified:")
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
}

// WriteText prints a line per package, and the details of what failed.
func (o Outcome) WriteText(w io.Writer) {
	for _, p := range o.Packages {
		run := ""
		if p.Run != "" {
			run = ", -run " + p.Run
		}
		fmt.Fprintf(w, "%s %s (%s%s)\n", status(p), p.ImportPath, o.Name, run)
		for _, d := range p.details() {
			fmt.Fprintf(w, "      %s\n", d)
		}
	}
}

// details says why a package failed: the tests, the race reports, the crash.
func (p PackageOutcome) details() []string {
	var details []string
	if top := topLevel(p.FailedTests); len(top) > 0 {
		details = append(details, fmt.Sprintf("%d tests failed (%d with subtests): %s", len(top), len(p.FailedTests), strings.Join(top, ", ")))
	}
	if p.Races > 0 {
		details = append(details, fmt.Sprintf("%d data race reports", p.Races))
	}
	if p.Fatal != "" {
		details = append(details, p.Fatal)
	}
	return details
}

func status(p PackageOutcome) string {
	switch {
	case p.BuildFailed:
		return "BUILD FAILED"
	case p.Passed:
		return "ok  "
	default:
		return "FAIL"
	}
}

// topLevel drops subtests ("TestX/case") from a list of test names.
func topLevel(tests []string) []string {
	var out []string
	for _, t := range tests {
		if !strings.Contains(t, "/") {
			out = append(out, t)
		}
	}
	return out
}
