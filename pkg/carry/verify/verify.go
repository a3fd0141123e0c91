// Package verify runs the carry's own regression tests twice, the way an
// upstream reviewer asks for: with the whole series applied (they must pass
// under -race) and with only the series' test files applied to the pristine
// fork (they must fail: assertion, race report or runtime crash).
package verify

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/carry/gowork"
	"github.com/kcp-carry/kcp-carry/pkg/carry/overlay"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
)

// Options configures Run. Only Root is required.
type Options struct {
	// Root is the kcp-carry repository.
	Root string
	// Progress receives a line per step. nil discards.
	Progress io.Writer
}

// Outcome is one run of the tests.
type Outcome struct {
	Name     string           `json:"name"`
	GoWork   string           `json:"goWork"`
	Packages []PackageOutcome `json:"packages"`
}

// Report is both runs and the verdict.
type Report struct {
	// Series is the dirhash of each carried module's series the tests ran
	// with, so a saved report can be matched to the carry it verified.
	Series    map[string]string `json:"series"`
	Packages  []string          `json:"packages"`
	WithCarry Outcome           `json:"withCarry"`
	TestsOnly Outcome           `json:"testsOnlyOnPristine"`
	// Problems lists why the carry is not verified; empty means the tests
	// fail without the fix and pass with it.
	Problems []string `json:"problems,omitempty"`
}

// OK says whether the tests fail without the carry and pass with it.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

const testsOnlyFilter = "tests-only"

func isTestFile(p string) bool { return strings.HasSuffix(p, "_test.go") }

// Run verifies the carry.
func Run(ctx context.Context, opts Options) (*Report, error) {
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, err
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	patchesDir := filepath.Join(root, "staging-patches")
	carry, err := loadCarry(patchesDir)
	if err != nil {
		return nil, err
	}
	pkgs := TestedPackages(carry)
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("%s: the carry adds or changes no _test.go file, so there is nothing to verify", patchesDir)
	}
	report := &Report{Series: SeriesHashes(carry), Packages: pkgs}

	goWork := filepath.Join(root, "go.work")
	if _, err := overlay.Run(ctx, overlay.Options{Root: root, GoWorkPath: goWork, Progress: progress}); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "carry verify: running the carry's tests with the carry (-race): %s\n", strings.Join(pkgs, " "))
	report.WithCarry, err = goTest(ctx, root, goWork, "with the carry", pkgs)
	if err != nil {
		return nil, err
	}

	// Only the test files of the series, on the pristine fork, in a workspace
	// of its own under .build/ (gitignored, reused when nothing changed).
	work := filepath.Join(root, ".build", "verify-tests-only")
	ov, err := overlay.Run(ctx, overlay.Options{
		Root:       root,
		OverlayDir: filepath.Join(work, "overlay"),
		Filter:     isTestFile,
		FilterName: testsOnlyFilter,
		Progress:   progress,
	})
	if err != nil {
		return nil, err
	}
	testsOnlyWork := filepath.Join(work, "go.work")
	if err := writeGoWork(testsOnlyWork, root, ov); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "carry verify: running the carry's tests on the pristine fork (-race)\n")
	report.TestsOnly, err = goTest(ctx, root, testsOnlyWork, "only the carry's tests, on the pristine fork", pkgs)
	if err != nil {
		return nil, err
	}

	report.Problems = judge(report)
	return report, nil
}

// judge lists every way the two runs fall short of fail-without/pass-with.
func judge(r *Report) []string {
	var problems []string
	for _, p := range r.WithCarry.Packages {
		switch {
		case p.BuildFailed:
			problems = append(problems, fmt.Sprintf("%s: the tests do not compile with the carry", p.ImportPath))
		case !p.Passed:
			problems = append(problems, fmt.Sprintf("%s: the tests fail with the carry", p.ImportPath))
		}
	}
	for _, p := range r.TestsOnly.Packages {
		switch {
		case p.BuildFailed:
			problems = append(problems, fmt.Sprintf("%s: the carry's tests do not compile against the pristine fork, so they cannot show that the fork is broken", p.ImportPath))
		case p.Passed:
			problems = append(problems, fmt.Sprintf("%s: the carry's tests pass on the pristine fork: they do not catch the bug", p.ImportPath))
		}
	}
	return problems
}

// loadCarry reads every carried module's series in patchesDir.
func loadCarry(patchesDir string) (map[string]*series.Series, error) {
	mods, err := overlay.CarriedModules(patchesDir)
	if err != nil {
		return nil, err
	}
	carry := map[string]*series.Series{}
	for _, mod := range mods {
		s, err := series.Load(filepath.Join(patchesDir, filepath.FromSlash(mod)))
		if err != nil {
			return nil, err
		}
		carry[mod] = s
	}
	return carry, nil
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
	seen := map[string]bool{}
	for mod, s := range carry {
		for _, p := range s.Patches {
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
	}
	var pkgs []string
	for p := range seen {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	return pkgs
}

// goTest runs `go test -race -count=1 -json` on pkgs in the workspace goWork.
func goTest(ctx context.Context, root, goWork, name string, pkgs []string) (Outcome, error) {
	args := append([]string{"test", "-race", "-count=1", "-json"}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOWORK=") }), "GOWORK="+goWork)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return Outcome{}, ctx.Err()
	}
	outcomes, err := parseTestJSON(&stdout, pkgs)
	if err != nil {
		return Outcome{}, fmt.Errorf("reading go test output: %w", err)
	}
	// A failing test run exits 1; anything the JSON does not explain (the go
	// command itself failing) is an error of the run, not a verdict.
	if runErr != nil && len(outcomes) == 0 {
		return Outcome{}, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), runErr, stderr.String())
	}
	for i := range outcomes {
		if outcomes[i].BuildFailed && len(outcomes[i].Excerpt) == 0 {
			outcomes[i].Excerpt = strings.Split(strings.TrimSpace(stderr.String()), "\n")
		}
	}
	return Outcome{Name: name, GoWork: goWork, Packages: outcomes}, nil
}

// writeGoWork writes a workspace that uses the repository and replaces the
// carried modules by the given overlay.
func writeGoWork(goWork, root string, ov *overlay.Result) error {
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
	for _, m := range ov.Modules {
		if err := w.AddReplace(m.Module, m.Dir); err != nil {
			return err
		}
	}
	return w.Write()
}

// WriteText prints the report for people.
func (r *Report) WriteText(w io.Writer) {
	for _, o := range []Outcome{r.WithCarry, r.TestsOnly} {
		fmt.Fprintf(w, "%s (go test -race):\n", o.Name)
		for _, p := range o.Packages {
			fmt.Fprintf(w, "  %s %s\n", status(p), p.ImportPath)
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
			for _, d := range details {
				fmt.Fprintf(w, "      %s\n", d)
			}
		}
	}
	if r.OK() {
		fmt.Fprintln(w, "verified: the carry's tests fail without the fix and pass with it")
		return
	}
	fmt.Fprintln(w, "NOT verified:")
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
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
