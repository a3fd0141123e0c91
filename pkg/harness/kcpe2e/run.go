package kcpe2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// Package is one package of kcp's e2e suite and which of its tests to run.
type Package struct {
	// Dir is the package's directory in a kcp tree, e.g. test/e2e/quota.
	Dir string
	// Tests names the tests to run; empty runs them all.
	Tests []string
	// RetryOnce lets a failed test run once more, alone; the result names
	// it (RetriedPassed), so a retry is never silent.
	RetryOnce bool
	// RetryReason says why the package's tests may be retried.
	RetryReason string
}

// Name is the package's last path element, also its test binary's name.
func (p Package) Name() string { return filepath.Base(p.Dir) }

// RunExpr is the -test.run expression selecting Tests ("" for all).
func (p Package) RunExpr() string { return anchored(p.Tests) }

func anchored(names []string) string {
	if len(names) == 0 {
		return ""
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return "^(" + strings.Join(quoted, "|") + ")$"
}

// Subset is kcp's own e2e tests on the paths the carry changes: the
// conformance tests that read partial object metadata or LIST across logical
// clusters, and all of the garbage collector's and quota's, whose controllers
// run on kcp's wildcard partial-metadata informers.
var Subset = []Package{
	{Dir: "test/e2e/conformance", Tests: []string{
		"TestPartialMetadataCRD",
		"TestPartialMetadataSameCRDMultipleWorkspaces",
		"TestCrossLogicalClusterList",
		"TestCRDCrossLogicalClusterListPartialObjectMetadata",
		// TestBuiltInCrossLogicalClusterListPartialObjectMetadata is Regression.
	}},
	{Dir: "test/e2e/garbagecollector"},
	{Dir: "test/e2e/quota", RetryOnce: true,
		RetryReason: "kcp's quota tests poll the quota controller's asynchronous status updates, which can time out on a loaded machine; one retry, named in the result"},
}

// Regression is kcp's test that kcp-patches/1-pin-bump extends: after its
// wildcard partial-metadata LIST of configmaps, one more from the watch
// cache, then full-object reads and a PATCH of each, none of which may show
// kcp.io/original-api-version. It must fail on a stock kcp and pass on a
// carried one, leaving either kcp ready.
var Regression = Package{Dir: "test/e2e/conformance", Tests: []string{"TestBuiltInCrossLogicalClusterListPartialObjectMetadata"}}

// WatchCachesApart is the test kcp-patches/5-partial-metadata-watch-caches
// adds: a bound custom resource's single-cluster and wildcard (with and
// without the export's identity) partial-metadata watches each get their
// own answer to one event, which a shared watch cache could not give. It
// pins what kcp does today and must pass on carried and stock kcp alike.
var WatchCachesApart = Package{Dir: "test/e2e/conformance", Tests: []string{"TestPartialMetadataWatchWildcardAndSingleClusterApart"}}

// IdentityIsolation is the test kcp-patches/6-identity-partial-metadata
// adds: wildcard partial-metadata LISTs and a WATCH through each of two
// identities of one resource return that identity's objects only. It fails
// on a kcp without that pull request's fix, carried or stock.
var IdentityIsolation = Package{Dir: "test/e2e/conformance", Tests: []string{"TestCrossLogicalClusterPartialObjectMetadataThroughIdentity"}}

// Compile builds the test binaries of pkgs with one `go test -c`, in tree
// with the tree's own go.mod (GOWORK=off), into outDir/<name>.test, and
// returns their paths by package directory. log receives the go command's
// output.
func Compile(ctx context.Context, tree, outDir string, pkgs []Package, log io.Writer) (map[string]string, error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	absOut, err := filepath.Abs(outDir)
	if err != nil {
		return nil, err
	}
	// The flags and environment of the stock kcp build (carry build
	// --pristine: -trimpath, CGO_ENABLED=0), so that the kcp packages and
	// fork modules the tests share with kcp come from the build cache
	// instead of being compiled again; -w: no DWARF in binaries only tests
	// run; kcp's own CI vets its tests.
	args := []string{"test", "-c", "-trimpath", "-ldflags=-w", "-vet=off", "-o", absOut + string(filepath.Separator)}
	bins := map[string]string{}
	for _, p := range pkgs {
		if _, seen := bins[p.Dir]; seen {
			continue
		}
		args = append(args, "./"+p.Dir)
		bins[p.Dir] = filepath.Join(absOut, p.Name()+".test")
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = tree
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s (in kcp tree %s): %w", strings.Join(args, " "), tree, err)
	}
	for dir, bin := range bins {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("go test -c of %s in %s wrote no %s: %w", dir, tree, bin, err)
		}
	}
	return bins, nil
}

// RunOptions say which compiled tests to run against which kcp.
type RunOptions struct {
	Package Package
	// Binary is the package's compiled test binary (Compile).
	Binary string
	// Tree is the kcp tree it was compiled from (KCP_REPO_DIR for the tests,
	// and the package directory their working directory, as go test does).
	Tree string
	// Kubeconfig is the running kcp's admin.kubeconfig (--kcp-kubeconfig).
	Kubeconfig string
	// Parallel is -test.parallel (0 leaves the default).
	Parallel int
	// Timeout is -test.timeout for each run (default 20m).
	Timeout time.Duration
	// KCP is the kcp binary for the tests that start a private kcp of their
	// own (KCP_ASSET_KCP, which kcp's fixture reads with NO_GORUN=1; kcp
	// main's quota tests do): the one under test, not whatever is on PATH.
	KCP string
	// Env are extra environment variables for the tests.
	Env []string
	// Log receives every line the tests print.
	Log io.Writer
	// Progress receives a line per finished test and per retry.
	Progress func(format string, args ...any)
}

// Outcome of one top-level test.
const (
	Pass = "pass"
	Fail = "fail"
	Skip = "skip"
)

// TestResult is one top-level test's outcome.
type TestResult struct {
	Name    string  `json:"name"`
	Outcome string  `json:"outcome"`
	Elapsed float64 `json:"elapsed"`
	// Finished is when it ended (test2json's time; zero if it never did).
	Finished time.Time `json:"finished,omitzero"`
	// Retried says it failed first and this is the outcome of its retry.
	Retried bool `json:"retried,omitempty"`
	// Output is the end of what it printed, kept for failures and skips.
	Output []string `json:"output,omitempty"`
}

// Result is one package's run.
type Result struct {
	Package string       `json:"package"`
	Tests   []TestResult `json:"tests"`
	Passed  int          `json:"passed"`
	Failed  int          `json:"failed"`
	Skipped int          `json:"skipped"`
	// RetriedPassed are the tests that failed first and passed on retry.
	RetriedPassed []string      `json:"retriedPassed,omitempty"`
	Elapsed       time.Duration `json:"elapsed"`
	// Problem is a failure of the run itself (the binary exited non-zero
	// with no failed test: a panic, a timeout, a bad flag), with its output.
	Problem string `json:"problem,omitempty"`
}

// OK is true when the run worked and no test failed.
func (r *Result) OK() bool { return r.Problem == "" && r.Failed == 0 }

// Summary is one line of counts.
func (r *Result) Summary() string {
	s := fmt.Sprintf("%s: %d passed, %d failed, %d skipped in %s", r.Package, r.Passed, r.Failed, r.Skipped, r.Elapsed.Round(time.Second))
	if len(r.RetriedPassed) > 0 {
		s += fmt.Sprintf(" (passed on retry: %s)", strings.Join(r.RetriedPassed, ", "))
	}
	if r.Problem != "" {
		s += "; the run failed: " + firstLine(r.Problem)
	}
	return s
}

// Names of the tests with outcome.
func (r *Result) Names(outcome string) []string {
	var names []string
	for _, t := range r.Tests {
		if t.Outcome == outcome {
			names = append(names, t.Name)
		}
	}
	return names
}

// outputLines is how much of a test's output a result keeps.
const outputLines = 40

// Run runs the package's selected tests against the kcp of o.Kubeconfig and,
// for a RetryOnce package, its failed tests once more, alone. When ctx ends
// first, the tests are stopped and Run returns what finished until then
// (Problem says it was stopped) with ctx's error.
func Run(ctx context.Context, o RunOptions) (*Result, error) {
	if o.Timeout <= 0 {
		o.Timeout = 20 * time.Minute
	}
	began := time.Now()
	res := &Result{Package: o.Package.Dir}
	first, problem, err := runOnce(ctx, o, o.Package.RunExpr())
	if err != nil {
		if ctx.Err() == nil {
			return nil, err
		}
		res.Tests, res.Problem = first, err.Error()
		res.count()
		res.Elapsed = time.Since(began)
		return res, err
	}
	res.Problem = problem
	if o.Package.RetryOnce && problem == "" {
		var failed []string
		for _, t := range first {
			if t.Outcome == Fail {
				failed = append(failed, t.Name)
			}
		}
		if len(failed) > 0 {
			o.progress("%s: retrying %d failed test(s) once (%s): %s", o.Package.Dir, len(failed), o.Package.RetryReason, strings.Join(failed, ", "))
			again, problem, err := runOnce(ctx, o, anchored(failed))
			if err != nil {
				return nil, err
			}
			res.Problem = problem
			for i, t := range first {
				if t.Outcome != Fail {
					continue
				}
				for _, a := range again {
					if a.Name == t.Name {
						a.Retried = true
						first[i] = a
						if a.Outcome == Pass {
							res.RetriedPassed = append(res.RetriedPassed, a.Name)
						}
						o.progress("%s: %s on retry: %s", o.Package.Dir, a.Name, a.Outcome)
					}
				}
			}
		}
	}
	res.Tests = first
	res.count()
	res.Elapsed = time.Since(began)
	return res, nil
}

// count sets Passed, Failed and Skipped from Tests.
func (r *Result) count() {
	for _, t := range r.Tests {
		switch t.Outcome {
		case Pass:
			r.Passed++
		case Fail:
			r.Failed++
		case Skip:
			r.Skipped++
		}
	}
}

func (o RunOptions) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(format, args...)
	}
}

// testEvent is one line of test2json output.
type testEvent struct {
	Action  string
	Test    string
	Elapsed float64
	Output  string
	Time    time.Time
}

// runOnce runs the binary once through `go tool test2json` and returns its
// top-level tests in the order they finished; a test that started but never
// finished (the binary died) is a failure. problem is set when the binary
// failed without a failed test.
func runOnce(ctx context.Context, o RunOptions, run string) ([]TestResult, string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, "", err
	}
	bin, err := filepath.Abs(o.Binary)
	if err != nil {
		return nil, "", err
	}
	args := []string{"tool", "test2json", "-t", "-p", o.Package.Dir, bin,
		"-test.v=test2json", "-test.count=1", "-test.timeout=" + o.Timeout.String()}
	if run != "" {
		args = append(args, "-test.run="+run)
	}
	if o.Parallel > 0 {
		args = append(args, fmt.Sprintf("-test.parallel=%d", o.Parallel))
	}
	args = append(args, "--kcp-kubeconfig="+o.Kubeconfig)

	env := []string{"KCP_REPO_DIR=" + o.Tree, "NO_GORUN=1"}
	if o.KCP != "" {
		env = append(env, "KCP_ASSET_KCP="+o.KCP)
	}
	pr, pw := io.Pipe()
	p, err := server.Start(server.Command{
		Path: goBin, Args: args,
		Dir:    filepath.Join(o.Tree, filepath.FromSlash(o.Package.Dir)),
		Env:    append(append(os.Environ(), env...), o.Env...),
		Stdout: pw,
		Grace:  30 * time.Second,
	})
	if err != nil {
		return nil, "", fmt.Errorf("running %s: %w", o.Binary, err)
	}
	go func() {
		select {
		case <-p.Done():
		case <-ctx.Done():
			_ = p.Stop()
		}
		pw.Close()
	}()

	outputs := map[string][]string{}
	started := map[string]bool{}
	var results []TestResult
	var pkgOutput []string
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	dec := json.NewDecoder(pr)
	for {
		var ev testEvent
		if err := dec.Decode(&ev); err != nil {
			if !errors.Is(err, io.EOF) {
				pkgOutput = append(pkgOutput, "decoding test2json output: "+err.Error())
			}
			break
		}
		top := ev.Test != "" && !strings.Contains(ev.Test, "/")
		name, _, _ := strings.Cut(ev.Test, "/")
		switch {
		case ev.Action == "output":
			fmt.Fprint(log, ev.Output)
			if ev.Test == "" {
				pkgOutput = keepTail(pkgOutput, strings.TrimRight(ev.Output, "\n"))
			} else {
				outputs[name] = keepTail(outputs[name], strings.TrimRight(ev.Output, "\n"))
			}
		case ev.Action == "run" && top:
			started[ev.Test] = true
		case top && (ev.Action == Pass || ev.Action == Fail || ev.Action == Skip):
			delete(started, ev.Test)
			r := TestResult{Name: ev.Test, Outcome: ev.Action, Elapsed: ev.Elapsed, Finished: ev.Time}
			if ev.Action != Pass {
				r.Output = outputs[ev.Test]
			}
			results = append(results, r)
			o.progress("%s: %s %s (%.1fs)", o.Package.Dir, strings.ToUpper(ev.Action), ev.Test, ev.Elapsed)
		}
	}
	io.Copy(io.Discard, pr)
	<-p.Done()
	var unfinished []string
	for name := range started {
		unfinished = append(unfinished, name)
	}
	sort.Strings(unfinished)
	for _, name := range unfinished {
		results = append(results, TestResult{Name: name, Outcome: Fail, Output: append(outputs[name], "(the test binary exited before this test finished)")})
	}
	problem := ""
	if exit := p.ExitError(); exit != nil {
		failed := false
		for _, r := range results {
			failed = failed || r.Outcome == Fail
		}
		if !failed {
			problem = fmt.Sprintf("%s exited: %v\n%s", filepath.Base(o.Binary), exit, strings.Join(pkgOutput, "\n"))
		}
	}
	if ctx.Err() != nil {
		return results, "", fmt.Errorf("running %s: %w", o.Binary, ctx.Err())
	}
	return results, problem, nil
}

func keepTail(lines []string, line string) []string {
	lines = append(lines, line)
	if len(lines) > outputLines {
		lines = lines[len(lines)-outputLines:]
	}
	return lines
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
