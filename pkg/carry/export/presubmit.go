package export

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
)

// Presubmit statuses: of a check, and of a pull request's presubmit.
const (
	Green  = "green"
	Red    = "red"
	NotRun = "not run"
)

// PullRequestResult is one pull request of the list, in Result and in
// carry presubmit's report: what it is, and what its presubmit gave (every
// check NotRun until carry presubmit ran it).
type PullRequestResult struct {
	Name     string `json:"name"`
	Upstream string `json:"upstream"`
	Base     string `json:"base"`
	Dir      string `json:"dir"`
	// Patches are its patch files' names, in order.
	Patches []string      `json:"patches,omitempty"`
	Fix     bool          `json:"fix"`
	After   []string      `json:"after,omitempty"`
	Checks  []CheckResult `json:"presubmit"`
	// Applies is "yes", "no" (Problem says why) or NotRun (no tree given
	// for its base).
	Applies string `json:"applies,omitempty"`
	Problem string `json:"problem,omitempty"`
	// RedWithout, for a fix, is "yes" when its tests failed without its
	// other changes, "no" when they passed, "timed out" or "out of disk"
	// when they only failed so, NotRun when they did not run; "n/a" for the
	// others.
	RedWithout string `json:"redWithout,omitempty"`
	// Seconds is the wall time of its presubmit.
	Seconds float64 `json:"seconds,omitempty"`
}

// CheckResult is a check and what it gave.
type CheckResult struct {
	Check
	Status string `json:"status"`
	// TimedOut says that a red check ran out of time (go test's -timeout,
	// or the check's allowance): it proves nothing about what it tests.
	TimedOut bool `json:"timedOut,omitempty"`
	// NoSpace says that a red check's machine ran out of disk ("no space
	// left on device"): it proves nothing either.
	NoSpace bool `json:"noSpace,omitempty"`
	// Excerpt is the end of a red check's output.
	Excerpt []string `json:"excerpt,omitempty"`
	Seconds float64  `json:"seconds,omitempty"`
}

// Presubmit is the column of the table: Red (naming the red checks), Green
// (every check ran and passed), Green with the checks that did not run
// named, or NotRun.
func (r PullRequestResult) Presubmit() string {
	var red, green, notRun []string
	for _, c := range r.Checks {
		switch c.Status {
		case Red:
			if why := c.inconclusive(); why != "" {
				c.Name += ", " + why
			}
			red = append(red, c.Name)
		case Green:
			green = append(green, c.Name)
		default:
			notRun = append(notRun, c.Name)
		}
	}
	switch {
	case len(red) > 0:
		return Red + " (" + strings.Join(slices.Compact(red), ", ") + ")"
	case len(green) > 0 && len(notRun) > 0:
		return Green + " (" + strings.Join(slices.Compact(notRun), ", ") + " not run)"
	case len(green) > 0:
		return Green
	case len(r.Checks) == 0:
		return "none"
	}
	return NotRun
}

// RedCheck is the first red check, nil for none.
func (r PullRequestResult) RedCheck() *CheckResult {
	for i := range r.Checks {
		if r.Checks[i].Status == Red {
			return &r.Checks[i]
		}
	}
	return nil
}

// OK says whether nothing that ran went wrong: it applies (or was not
// run), no check is red, and a fix that ran is red without itself.
func (r PullRequestResult) OK() bool { return presubmitRed(r) == "" }

// result is the pull request as Result and the report list it, its checks
// not run.
func (pr *PullRequest) result() PullRequestResult {
	r := PullRequestResult{Name: pr.Name, Upstream: pr.Upstream, Base: pr.Base, Dir: pr.Dir, Fix: pr.Fix, After: pr.After, RedWithout: "n/a"}
	for _, p := range pr.Patches {
		r.Patches = append(r.Patches, p.Name)
	}
	for _, c := range pr.Presubmit {
		r.Checks = append(r.Checks, CheckResult{Check: c, Status: NotRun})
	}
	if pr.Fix {
		r.RedWithout = NotRun
	}
	return r
}

// PresubmitReport is carry presubmit's result, and what carry export
// --presubmit-report reads.
type PresubmitReport struct {
	PullRequests []PullRequestResult `json:"pullRequests"`
}

// OK says whether every pull request's presubmit is OK.
func (r *PresubmitReport) OK() bool {
	return !slices.ContainsFunc(r.PullRequests, func(p PullRequestResult) bool { return !p.OK() })
}

// WriteTable prints the table: pull request, upstream, base, applies,
// presubmit, red without it, time; then each red check's command and the
// end of its output.
func (r *PresubmitReport) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PULL REQUEST\tUPSTREAM\tBASE\tAPPLIES\tPRESUBMIT\tRED WITHOUT IT\tTIME")
	for _, p := range r.PullRequests {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.Upstream, p.Base, p.Applies, p.Presubmit(), p.RedWithout, (time.Duration(p.Seconds) * time.Second).String())
	}
	_ = tw.Flush()
	for _, p := range r.PullRequests {
		if p.Problem != "" {
			fmt.Fprintf(w, "\n%s: %s\n", p.Name, p.Problem)
		}
		for _, c := range p.Checks {
			if c.Status == Red {
				fmt.Fprintf(w, "\n%s: red: %s\n", p.Name, c.Check)
				for _, l := range c.Excerpt {
					fmt.Fprintf(w, "    %s\n", l)
				}
			}
		}
	}
}

// PresubmitOptions configures Presubmit.
type PresubmitOptions struct {
	Carry *carryset.Carry
	// KCPSource is a kcp main tree, KCPReleaseSource a tree of the release
	// the backport forms are for (v0.32.3); without one, the kcp pull
	// requests on it are not run.
	KCPSource, KCPReleaseSource string
	// Only runs the pull requests of these names; none runs all.
	Only []string
	// E2E runs the e2e checks; without it they are listed as not run.
	E2E bool
	// PullRequests is the list to run; nil builds it from Carry
	// (PullRequests).
	PullRequests []*PullRequest
	// Progress receives a line per step; nil discards.
	Progress io.Writer
}

// presubmitEnv is what preparing a pull request's tree needs.
type presubmitEnv struct {
	carry                       *carryset.Carry
	kcpSource, kcpReleaseSource string
}

// Presubmit runs every pull request's presubmit, in merge order: its base
// with the series up to it in a scratch directory, each of its checks
// there (an e2e check, with E2E, in kcp after the whole series), and, for
// a fix, its tests again without its other changes, which must fail.
func Presubmit(ctx context.Context, o PresubmitOptions) (*PresubmitReport, error) {
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	prs := o.PullRequests
	if prs == nil {
		var err error
		if prs, err = PullRequests(ctx, o.Carry); err != nil {
			return nil, err
		}
	}
	for _, name := range o.Only {
		if !slices.ContainsFunc(prs, func(pr *PullRequest) bool { return pr.Name == name }) {
			return nil, fmt.Errorf("--only %s: no such pull request", name)
		}
	}
	env := &presubmitEnv{carry: o.Carry, kcpSource: o.KCPSource, kcpReleaseSource: o.KCPReleaseSource}
	work, err := os.MkdirTemp("", "carry-presubmit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	report := &PresubmitReport{}
	// whole is kcp after the series, prepared once per tree for the e2e
	// checks.
	whole := map[string]string{}
	for n, pr := range prs {
		if len(o.Only) > 0 && !slices.Contains(o.Only, pr.Name) {
			continue
		}
		start := time.Now()
		r := pr.result()
		logf := func(format string, args ...any) {
			fmt.Fprintf(progress, "carry presubmit: %s: %s\n", pr.Name, fmt.Sprintf(format, args...))
		}
		tree := filepath.Join(work, fmt.Sprint(n))
		logf("its base, %s, with the series up to it, in %s", pr.Base, tree)
		err := pr.kind.prepare(ctx, env, pr, tree, withPR)
		switch {
		case errors.Is(err, errNoTree):
			r.Applies, r.Problem = NotRun, err.Error()
			if pr.Fix {
				r.RedWithout = NotRun
			}
			logf("not run: %v", err)
		case err != nil:
			r.Applies, r.Problem = "no", err.Error()
			logf("does not apply: %v", err)
		default:
			r.Applies = "yes"
			logf("applies to %s (%s)", pr.Base, pr.Upstream)
			for i, c := range pr.Presubmit {
				dir := tree
				if c.E2E {
					if !o.E2E {
						logf("%s: not run (--e2e runs it)", c)
						continue
					}
					if dir = whole[pr.Base]; dir == "" {
						dir = filepath.Join(work, "series-"+pr.Base)
						logf("kcp after the whole series, with the overlay, in %s", dir)
						if err := pr.kind.prepare(ctx, env, pr, dir, wholeSeries); err != nil {
							r.Checks[i].Status, r.Checks[i].Excerpt = Red, []string{err.Error()}
							continue
						}
						whole[pr.Base] = dir
					}
				}
				logf("%s", c)
				r.Checks[i] = runCheck(ctx, c, dir)
				logf("%s: %s", c.Name, r.Checks[i].Status)
				for _, line := range r.Checks[i].Excerpt {
					logf("  %s", line)
				}
			}
			if pr.Fix {
				r.RedWithout = redWithout(ctx, env, pr, filepath.Join(work, fmt.Sprint(n)+"-without"), logf)
			}
		}
		os.RemoveAll(tree)
		r.Seconds = time.Since(start).Round(time.Second).Seconds()
		report.PullRequests = append(report.PullRequests, r)
	}
	return report, nil
}

// inconclusive says why a red check proves nothing of what it tests: it
// timed out, or its machine ran out of disk; "" when its red is its tests'.
func (c CheckResult) inconclusive() string {
	switch {
	case c.TimedOut:
		return "timed out"
	case c.NoSpace:
		return "out of disk"
	}
	return ""
}

// redWithout runs pr's test checks on the series before it with only its
// tests: "yes" when one fails, "no" when all pass, and when the only
// failures prove nothing, why ("timed out", "out of disk").
func redWithout(ctx context.Context, env *presubmitEnv, pr *PullRequest, tree string, logf func(string, ...any)) string {
	defer os.RemoveAll(tree)
	if err := pr.kind.prepare(ctx, env, pr, tree, withoutPR); err != nil {
		logf("without it: its tests do not apply: %v", err)
		return "no"
	}
	ran, inconclusive := false, ""
	for _, c := range pr.Presubmit {
		if !c.Tests || c.E2E {
			continue
		}
		ran = true
		logf("without it: %s", c)
		switch r := runCheck(ctx, c, tree); {
		case r.inconclusive() != "":
			inconclusive = r.inconclusive()
			logf("without it: %s, which shows nothing", inconclusive)
		case r.Status == Red:
			logf("without it: red, as it must be")
			return "yes"
		}
	}
	switch {
	case inconclusive != "":
		return inconclusive
	case !ran:
		logf("without it: no check runs its tests")
	}
	return "no"
}

// compileAllowance is how long a check may take beyond its -timeout: the
// go command's compile of what it tests.
const compileAllowance = time.Hour

// runCheck runs c in tree/c.Dir: Green when it exits 0.
func runCheck(ctx context.Context, c Check, tree string) CheckResult {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, time.Duration(c.Timeout)+compileAllowance)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Command[0], c.Command[1:]...)
	cmd.Dir = filepath.Join(tree, filepath.FromSlash(c.Dir))
	gowork := "GOWORK=off"
	if c.Workspace {
		gowork = "GOWORK=" + filepath.Join(tree, "go.work")
	}
	// cmd.Environ, not os.Environ: it sets PWD to cmd.Dir, as a shell's cd
	// does; kcp's Makefile puts its test server's files in $(PWD). The
	// caller's GOFLAGS and CGO_ENABLED (make test sets -trimpath and cgo
	// off) are not the upstream CI's: kcp's e2e target runs go test -race.
	cmd.Env = append(slices.DeleteFunc(cmd.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOWORK=") || strings.HasPrefix(kv, "GOFLAGS=") || strings.HasPrefix(kv, "CGO_ENABLED=")
	}), gowork)
	if slices.Contains(c.Command, "-race") {
		// -race needs cgo: said outright, so a machine without a C
		// compiler fails with go's own message about it.
		cmd.Env = append(cmd.Env, "CGO_ENABLED=1")
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	r := CheckResult{Check: c, Status: Green, Seconds: time.Since(start).Round(time.Second).Seconds()}
	if err != nil {
		text := out.String()
		lines := strings.Split(strings.TrimSpace(text), "\n")
		r.Status, r.Excerpt = Red, append(lines[max(0, len(lines)-20):], err.Error())
		i := strings.Index(text, "panic: test timed out after")
		r.TimedOut = ctx.Err() != nil || i >= 0
		r.NoSpace = strings.Contains(text, "no space left on device")
		if i >= 0 {
			// The end of a time-out is goroutine dumps; its first line and
			// the tests running then say what ran out of time.
			head, _, _ := strings.Cut(text[i:], "\n\n")
			r.Excerpt = strings.Split(head, "\n")
		}
	}
	return r
}

// loadPresubmitReport reads a carry presubmit --json report, by pull
// request name; no file is no report.
func loadPresubmitReport(file string) (map[string]PullRequestResult, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--presubmit-report: %w", err)
	}
	var r PresubmitReport
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("--presubmit-report %s: not a carry presubmit --json report: %w", file, err)
	}
	byName := map[string]PullRequestResult{}
	for _, p := range r.PullRequests {
		byName[p.Name] = p
	}
	return byName, nil
}

// checkPresubmits refuses a pull request whose presubmit in the report is
// red, unless allowRed, and fills each one's result from the report.
func checkPresubmits(prs []*PullRequest, report map[string]PullRequestResult, file string, allowRed bool, progress io.Writer) ([]PullRequestResult, error) {
	var out []PullRequestResult
	var errs []error
	if report == nil {
		fmt.Fprintln(progress, "carry export: no presubmit report given (--presubmit-report FILE, from carry presubmit --json): the pull requests' presubmits are not checked")
	}
	for _, pr := range prs {
		r, ok := report[pr.Name]
		switch {
		case !ok:
			r = pr.result()
			if report != nil {
				fmt.Fprintf(progress, "carry export: %s: not in the presubmit report %s\n", pr.Name, file)
			}
		case presubmitRed(r) != "" && !allowRed:
			errs = append(errs, fmt.Errorf("%s: its presubmit is red in %s: %s; fix it, or export it with --allow-red (its text then says so)", pr.Name, file, presubmitRed(r)))
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// presubmitRed says what is red in r: a check, its patches not applying,
// or a fix whose tests do not fail without it (they pass, or only time
// out); "" for nothing. carry presubmit's exit status (OK) and the export's
// refusal both judge by it.
func presubmitRed(r PullRequestResult) string {
	switch c := r.RedCheck(); {
	case c != nil:
		return "the check `" + c.Check.String() + "` is red"
	case r.Applies == "no":
		return "it does not apply: " + r.Problem
	case r.RedWithout == "no":
		return "its tests pass without its changes"
	case r.RedWithout != "yes" && r.RedWithout != "n/a" && r.RedWithout != NotRun:
		return "its tests without its changes did not fail: " + r.RedWithout
	}
	return ""
}

// redNote is the line a pull request's text gets when it is exported with
// a red presubmit (--allow-red). The text stands alone, so it names the
// check, which the reader can run, and not the tool that ran it.
func redNote(r PullRequestResult) string {
	return fmt.Sprintf("\n**Not ready to merge.** On its base, %s: hold this pull request until that passes.\n", presubmitRed(r))
}
