package kcpscripts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcppatches"
	"github.com/kcp-carry/kcp-carry/pkg/util/gitexec"
)

// The kcp trees the tests run on.
const (
	EnvKCPSource     = "KCP_SOURCE"
	EnvKCPMainSource = "KCP_MAIN_SOURCE"
)

const (
	// forkRepo is the repository of kcp's Kubernetes fork; a fork replace
	// points at it or at a directory in it.
	forkRepo = "github.com/kcp-dev/kubernetes"
	// pinnedRev is the fork commit both trees pin: no go.mod may name it
	// after the bump.
	pinnedRev = "e006560fc76a"
	// bumpTo is the fork commit the script moves the trees to, and
	// bumpStamp its stamp, which every fork replace must end with after it.
	bumpTo    = "v0.0.0-20260701120000-0123456789ab"
	bumpStamp = "20260701120000-0123456789ab"
	// malformed looks like a version and is no pseudo-version.
	malformed = "v0.0.0-2026-abc"
	// contributor is the GitHub user of the rebasing guide's first run,
	// contributorFork the commit of their fork it moves the trees to, and
	// contributorStamp that commit's stamp.
	contributor      = "rebaser"
	contributorFork  = "v0.0.0-20260615120000-fedcba987654"
	contributorStamp = "20260615120000-fedcba987654"
	// guide is kcp's rebasing guide, which runs the script, and guideUser
	// its placeholder for the contributor's GitHub user.
	guide     = "docs/content/contributing/guides/rebasing-kubernetes/index.md"
	guideUser = "<your username here>"
)

// goModules are the go.mod files of kcp that pin the fork.
var goModules = []string{"go.mod", "docs/generators/cli-doc/go.mod", "staging/src/github.com/kcp-dev/virtual-workspace-framework/go.mod"}

// stamp is the <YYYYMMDDhhmmss>-<12 hex> end of a fork replace's version.
var stamp = regexp.MustCompile(`[0-9]{14}-[0-9a-f]{12}$`)

// TestBumpK8sMovesEveryForkReplace runs kcp's hack/bump-k8s.sh, with
// kcp-patches/ applied, on a copy of each kcp tree with
// BRANCH=<a fork pseudo-version>, the network off and `go mod tidy` skipped
// (a go wrapper first on PATH): no go.mod names the pinned commit, every
// fork replace names the new one, keeping its version's prefix and its
// path, no other line changes, no other file does, and tidy was run in each
// module. A malformed BRANCH and a fork replace without a commit stamp are
// refused, changing nothing. The positive control: the script as kcp ships
// it fails the same check, leaving the staging modules on the pinned commit.
func TestBumpK8sMovesEveryForkReplace(t *testing.T) {
	root := testfs.RepoRoot(t)
	prs, err := kcppatches.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{EnvKCPSource, EnvKCPMainSource} {
		t.Run(env, func(t *testing.T) {
			src := os.Getenv(env)
			if src == "" {
				t.Skipf("%s is not set: set it to a kcp source tree to run kcp's hack/bump-k8s.sh (kcp-patches/ applied) on a copy", env)
			}
			needCommands(t, "bash", "git", "jq")
			ctx := context.Background()

			t.Run("patched", func(t *testing.T) {
				tree := scratchTree(ctx, t, src, prs)
				before := readGoMods(t, tree)

				// Refused before any change: a malformed BRANCH, and a fork
				// replace whose version names no commit, in the last module,
				// so that edits applied module by module would show in the
				// first two.
				out, err := bumpK8s(ctx, t, tree, "")
				expectRefused(t, tree, "", out, err, "BRANCH is not set", nil)
				out, err = bumpK8s(ctx, t, tree, malformed)
				expectRefused(t, tree, malformed, out, err, "BRANCH="+malformed+" is not a pseudo-version of the fork", nil)
				last := goModules[len(goModules)-1]
				unstamped := unstampOne(t, before[last])
				testfs.Write(t, filepath.Join(tree, last), unstamped)
				out, err = bumpK8s(ctx, t, tree, bumpTo)
				expectRefused(t, tree, bumpTo, out, err, "the version names no fork commit", []string{last})
				if got := testfs.Read(t, filepath.Join(tree, last)); got != unstamped {
					t.Errorf("%s changed although the script refused it", last)
				}
				gitRun(ctx, t, tree, "checkout", "-q", "--", last)

				out, err = bumpK8s(ctx, t, tree, bumpTo)
				if err != nil {
					t.Fatalf("BRANCH=%s hack/bump-k8s.sh: %v\n%s", bumpTo, err, tail(out))
				}
				if problems := checkBump(before, readGoMods(t, tree), bumpStamp); len(problems) > 0 {
					t.Errorf("BRANCH=%s hack/bump-k8s.sh:\n%s", bumpTo, strings.Join(problems, "\n"))
				}
				if other := changedFiles(ctx, t, tree, true); len(other) > 0 {
					t.Errorf("BRANCH=%s hack/bump-k8s.sh changed files besides the go.mod and go.sum files: %s", bumpTo, strings.Join(other, ", "))
				}
				tidied := tidyLog(t, tree)
				for _, m := range goModules {
					if dir := filepath.Dir(m); !slices.Contains(tidied, dir) {
						t.Errorf("go mod tidy did not run in %s (it ran in %q)", dir, tidied)
					}
				}
				t.Logf("%s, patched: %d fork replaces in %d go.mod files moved to %s, nothing else changed; no BRANCH, %s and a replace without a stamp refused", src, countForkReplaces(t, before), len(goModules), bumpStamp, malformed)
			})

			// kcp's rebasing guide, as the pull request changes it: its two
			// runs of the script, the contributor's fork first and then
			// kcp-dev's, with nothing between them, end where one run to
			// kcp-dev's commit ends; the guide's check finds none of the
			// contributor's replaces left. In both forms BRANCH takes: the
			// fork commits' pseudo-versions (as kcp's pin bump gives it), and
			// the guide's own branches, which the script resolves with go list
			// from local git repositories that stand in for the two forks.
			for _, form := range []string{"pseudo-versions", "branches"} {
				t.Run("patched, the rebasing guide's two runs, "+form, func(t *testing.T) {
					tree := scratchTree(ctx, t, src, prs)
					before := readGoMods(t, tree)
					steps := guideSteps(t, tree)
					first, second, env := contributorFork, bumpTo, []string(nil)
					firstStamp, secondStamp := contributorStamp, bumpStamp
					if form == "branches" {
						first, second = "", ""
						var forks localForks
						forks, env = serveGuideBranches(ctx, t, steps)
						firstStamp, secondStamp = forks.stamp("github.com/"+contributor+"/kubernetes"), forks.stamp(forkRepo)
					}
					out, err := runGuideStep(ctx, t, tree, steps.first, first, env...)
					if err != nil {
						t.Fatalf("the guide's first run, %s: %v\n%s", steps.first, err, tail(out))
					}
					if problems := checkMoved(before, readGoMods(t, tree), "github.com/"+contributor+"/kubernetes", firstStamp); len(problems) > 0 {
						t.Fatalf("the guide's first run, %s, did not move every fork replace to the contributor's fork at %s:\n%s", steps.first, firstStamp, strings.Join(problems, "\n"))
					}
					out, err = runGuideStep(ctx, t, tree, steps.second, second, env...)
					if err != nil {
						t.Fatalf("the guide's second run, %s, right after the first: %v\n%s", steps.second, err, tail(out))
					}
					after := readGoMods(t, tree)
					if problems := checkBump(before, after, secondStamp); len(problems) > 0 {
						t.Errorf("the guide's two runs do not end where one run to %s does:\n%s", secondStamp, strings.Join(problems, "\n"))
					}
					check := strings.ReplaceAll(steps.check, guideUser, contributor)
					out, _ = bashIn(ctx, t, tree, check)
					var counts []string
					for line := range strings.Lines(out) {
						counts = append(counts, strings.TrimSpace(line))
					}
					if len(counts) != 2*len(goModules) || slices.ContainsFunc(counts, func(c string) bool { return !strings.HasSuffix(c, ":0") }) {
						t.Errorf("the guide's check, %s, after its two runs: want 0 in each of %d files, got:\n%s", check, 2*len(goModules), out)
					}
					t.Logf("%s, patched, %s: the guide's runs %q then %q moved every fork replace to github.com/%s/kubernetes at %s and back to %s at %s, and its check counts %s", src, form, steps.first, steps.second, contributor, firstStamp, forkRepo, secondStamp, strings.Join(counts, " "))
				})
			}

			// The positive control: the script as kcp ships it moves
			// k8s.io/kubernetes alone, by its whole version string, and
			// copies the root's replaces into the other modules.
			t.Run("stock", func(t *testing.T) {
				tree := scratchTree(ctx, t, src, nil)
				before := readGoMods(t, tree)
				out, err := bumpK8s(ctx, t, tree, bumpTo)
				after := readGoMods(t, tree)
				problems := checkBump(before, after, bumpStamp)
				if len(problems) == 0 {
					t.Fatalf("positive control: kcp's stock hack/bump-k8s.sh passed the check (exit %v)\n%s", err, tail(out))
				}
				// Every fork replace but k8s.io/kubernetes's stays on the
				// pinned commit, in each module.
				var left []string
				for _, m := range goModules {
					total, stale := forkReplaces(t, m, after[m])
					if total == 0 || stale != total-1 {
						t.Errorf("positive control: %s after the stock script: %d of %d fork replaces name %s, want all but k8s.io/kubernetes", m, stale, total, pinnedRev)
					}
					left = append(left, fmt.Sprintf("%s: %d of %d", m, stale, total))
				}
				t.Logf("positive control: kcp's stock hack/bump-k8s.sh (exit %v) fails the check as it must: fork replaces left at %s: %s; %d problems, the first:\n%s", err, pinnedRev, strings.Join(left, ", "), len(problems), strings.Join(problems[:min(4, len(problems))], "\n"))
			})

			// The positive control of the guide's two runs: kcp's guide and
			// script as shipped leave the replaces on the contributor's fork.
			t.Run("stock, the rebasing guide's two runs", func(t *testing.T) {
				tree := scratchTree(ctx, t, src, nil)
				steps := guideSteps(t, tree)
				out, err := runGuideStep(ctx, t, tree, steps.first, contributorFork)
				if err != nil {
					t.Fatalf("the stock guide's first run, %s: %v\n%s", steps.first, err, tail(out))
				}
				out, err = runGuideStep(ctx, t, tree, steps.second, bumpTo)
				left := 0
				for _, m := range goModules {
					left += strings.Count(testfs.Read(t, filepath.Join(tree, m)), "github.com/"+contributor+"/")
				}
				if left == 0 {
					t.Fatalf("positive control: after the stock guide's two runs (the second: exit %v) no go.mod names the contributor's fork\n%s", err, tail(out))
				}
				t.Logf("positive control: after the stock guide's two runs (the second: exit %v), %d replaces still point at the contributor's fork", err, left)
			})
		})
	}
}

// scratchTree is a copy of the kcp tree src in a temporary directory, a
// git repository with prs applied.
func scratchTree(ctx context.Context, t *testing.T, src string, prs []*kcppatches.PR) string {
	t.Helper()
	tree := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := kcppatches.ApplyToCopy(ctx, src, tree, prs); err != nil {
		t.Fatal(err)
	}
	return tree
}

// needCommands fails the test unless every named command is on PATH: the
// scripts need them, and a skip would pass silently.
func needCommands(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			t.Fatalf("%s is not on PATH: kcp's hack/bump-k8s.sh needs it (install it, e.g. apt-get install %s)", name, name)
		}
	}
}

// bumpK8s runs tree's hack/bump-k8s.sh from the tree's root with BRANCH
// set, GITHUB_USER and GITHUB_REPO unset (their defaults), the network off
// and a go first on PATH that skips `go mod tidy`, noting its directory in
// tree/.git/tidied, and runs the real go otherwise.
func bumpK8s(ctx context.Context, t *testing.T, tree, branch string) (string, error) {
	t.Helper()
	return bashIn(ctx, t, tree, "BRANCH="+branch+" bash hack/bump-k8s.sh")
}

// bashIn runs the command line cmd with bash in tree's root, as bumpK8s
// runs the script: GITHUB_USER and GITHUB_REPO unset, the network off and
// `go mod tidy` skipped; extraEnv is added to its environment.
func bashIn(ctx context.Context, t *testing.T, tree, cmdline string, extraEnv ...string) (string, error) {
	t.Helper()
	realGo, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	testfs.Write(t, filepath.Join(bin, "go"), fmt.Sprintf(`#!/bin/sh
# go mod tidy would need the network: noted in the tidy log and skipped.
if [ "$1" = mod ] && [ "$2" = tidy ]; then
	pwd -P >> '%s'
	exit 0
fi
exec '%s' "$@"
`, filepath.Join(tree, ".git", "tidied"), realGo))
	if err := os.Chmod(filepath.Join(bin, "go"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", cmdline)
	cmd.Dir = tree
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GITHUB_USER=") && !strings.HasPrefix(kv, "GITHUB_REPO=") && !strings.HasPrefix(kv, "BRANCH=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
	cmd.Env = append(cmd.Env, extraEnv...) // the later of two settings wins
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// expectRefused checks that a run of the script exited non-zero with the
// message want and left the files of tree as they were: git status shows
// only the files the test edited.
func expectRefused(t *testing.T, tree, branch, out string, err error, want string, edited []string) {
	t.Helper()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Errorf("BRANCH=%s hack/bump-k8s.sh: want a non-zero exit, got %v\n%s", branch, err, tail(out))
	} else if !strings.Contains(out, want) {
		t.Errorf("BRANCH=%s hack/bump-k8s.sh exited %d without saying %q:\n%s", branch, exit.ExitCode(), want, tail(out))
	}
	if changed := changedFiles(context.Background(), t, tree, false); !slices.Equal(changed, edited) {
		t.Errorf("BRANCH=%s hack/bump-k8s.sh refused, and git status shows %q changed, want %q", branch, changed, edited)
	}
}

// checkBump compares kcp's go.mod files before and after a bump to the fork
// commit stamp want, and says what is wrong: a go.mod still naming pinnedRev,
// a fork replace not at want, or a changed line other than a fork replace's
// version (with its prefix kept and its path unchanged).
func checkBump(before, after map[string]string, want string) []string {
	var problems []string
	for _, m := range goModules {
		if n := strings.Count(after[m], pinnedRev); n > 0 {
			problems = append(problems, fmt.Sprintf("%s: names %s %d times", m, pinnedRev, n))
		}
		old, bumped, err := parseGoMods(m, before, after)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, r := range bumped.Replace {
			if isFork(r.New.Path) && !strings.HasSuffix(r.New.Version, want) {
				problems = append(problems, fmt.Sprintf("%s: %s => %s %s: not at %s", m, r.Old.Path, r.New.Path, r.New.Version, want))
			}
		}
		// The line of each fork replace, as the bump must leave it.
		lines := map[int]string{}
		oldLines := strings.Split(before[m], "\n")
		for _, r := range old.Replace {
			if isFork(r.New.Path) {
				n := r.Syntax.Start.Line
				lines[n] = strings.Replace(oldLines[n-1], r.New.Version, stamp.ReplaceAllString(r.New.Version, want), 1)
			}
		}
		newLines := strings.Split(after[m], "\n")
		if len(newLines) != len(oldLines) {
			problems = append(problems, fmt.Sprintf("%s: %d lines, was %d", m, len(newLines), len(oldLines)))
			continue
		}
		for i, line := range newLines {
			if w, fork := lines[i+1]; fork && line != w {
				problems = append(problems, fmt.Sprintf("%s:%d: %q, want %q", m, i+1, strings.TrimSpace(line), strings.TrimSpace(w)))
			} else if !fork && line != oldLines[i] {
				problems = append(problems, fmt.Sprintf("%s:%d: changed, and it is no fork replace: %q, was %q", m, i+1, strings.TrimSpace(line), strings.TrimSpace(oldLines[i])))
			}
		}
	}
	return problems
}

// parseGoMods parses the go.mod m of kcp as it was before a run of the
// script and after.
func parseGoMods(m string, before, after map[string]string) (old, bumped *modfile.File, err error) {
	if old, err = modfile.Parse(m, []byte(before[m]), nil); err != nil {
		return nil, nil, err
	}
	if bumped, err = modfile.Parse(m, []byte(after[m]), nil); err != nil {
		return nil, nil, err
	}
	return old, bumped, nil
}

// isFork says whether a replacement's path is the fork's repository or a
// directory in it.
func isFork(path string) bool {
	return path == forkRepo || strings.HasPrefix(path, forkRepo+"/")
}

// forkReplaces counts the fork replaces of a go.mod, and those of them whose
// version names pinnedRev.
func forkReplaces(t *testing.T, name, data string) (total, stale int) {
	t.Helper()
	f, err := modfile.Parse(name, []byte(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Replace {
		if isFork(r.New.Path) {
			total++
			if strings.HasSuffix(r.New.Version, pinnedRev) {
				stale++
			}
		}
	}
	return total, stale
}

// countForkReplaces is the number of fork replaces in all of goModules.
func countForkReplaces(t *testing.T, mods map[string]string) int {
	t.Helper()
	n := 0
	for _, m := range goModules {
		total, _ := forkReplaces(t, m, mods[m])
		n += total
	}
	return n
}

// unstampOne is a go.mod with its last fork replace at a release version,
// which names no fork commit.
func unstampOne(t *testing.T, data string) string {
	t.Helper()
	f, err := modfile.Parse("go.mod", []byte(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(f.Replace) - 1; i >= 0; i-- {
		if r := f.Replace[i]; isFork(r.New.Path) {
			if err := f.AddReplace(r.Old.Path, r.Old.Version, r.New.Path, "v0.36.0"); err != nil {
				t.Fatal(err)
			}
			out, err := f.Format()
			if err != nil {
				t.Fatal(err)
			}
			return string(out)
		}
	}
	t.Fatal("no fork replace to unstamp")
	return ""
}

// readGoMods reads goModules of tree.
func readGoMods(t *testing.T, tree string) map[string]string {
	t.Helper()
	mods := map[string]string{}
	for _, m := range goModules {
		mods[m] = testfs.Read(t, filepath.Join(tree, m))
	}
	return mods
}

// changedFiles lists the files git status reports changed in tree, without
// the go.mod and go.sum files of goModules when allowMods is set.
func changedFiles(ctx context.Context, t *testing.T, tree string, allowMods bool) []string {
	t.Helper()
	var changed []string
	for line := range strings.Lines(gitRun(ctx, t, tree, "status", "--porcelain", "--untracked-files=all")) {
		path := strings.TrimSuffix(line, "\n")[3:] // XY path
		if allowMods && (slices.Contains(goModules, path) || slices.Contains(goModules, strings.TrimSuffix(path, ".sum")+".mod")) {
			continue
		}
		changed = append(changed, path)
	}
	return changed
}

// tidyLog is the module directories, relative to tree, where the go wrapper
// skipped `go mod tidy`.
func tidyLog(t *testing.T, tree string) []string {
	t.Helper()
	real, err := filepath.EvalSymlinks(tree)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for line := range strings.Lines(testfs.Read(t, filepath.Join(tree, ".git", "tidied"))) {
		rel, err := filepath.Rel(real, strings.TrimSpace(line))
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, filepath.ToSlash(rel))
	}
	return dirs
}

func gitRun(ctx context.Context, t *testing.T, tree string, args ...string) string {
	t.Helper()
	out, err := gitexec.Repo{Dir: tree}.Run(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// tail is the end of a script's output (its xtrace is long).
func tail(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// rebasingGuide is what kcp's rebasing guide runs of hack/bump-k8s.sh: the
// first run, to the contributor's fork (GITHUB_USER=...), the second, to
// kcp-dev's, and the check after it ("" when the guide gives none).
type rebasingGuide struct {
	first, second, check string
}

var (
	guideRun   = regexp.MustCompile(`(?m)^\s*((?:GITHUB_USER=(?:<[^>]*>|\S+) )?BRANCH=\S+ hack/bump-k8s\.sh)\s*$`)
	guideCheck = regexp.MustCompile(`(?m)^\s*(grep -c '?github\.com/` + regexp.QuoteMeta(guideUser) + `/.*)$`)
	branchVar  = regexp.MustCompile(`\bBRANCH=\S+`)
)

// guideSteps reads the runs of hack/bump-k8s.sh in tree's rebasing guide:
// two, the first with GITHUB_USER, the second without.
func guideSteps(t *testing.T, tree string) rebasingGuide {
	t.Helper()
	text := testfs.Read(t, filepath.Join(tree, guide))
	var runs []string
	for _, m := range guideRun.FindAllStringSubmatch(text, -1) {
		runs = append(runs, m[1])
	}
	if len(runs) != 2 || !strings.HasPrefix(runs[0], "GITHUB_USER=") || strings.Contains(runs[1], "GITHUB_USER=") {
		t.Fatalf("%s: want two runs of hack/bump-k8s.sh, the first with GITHUB_USER and the second without; found %q", guide, runs)
	}
	g := rebasingGuide{first: runs[0], second: runs[1]}
	if m := guideCheck.FindStringSubmatch(text); m != nil {
		g.check = strings.TrimSpace(m[1])
	}
	return g
}

// runGuideStep runs one of the guide's command lines in tree, with the
// guide's placeholder user the contributor, and BRANCH the fork commit
// version, or, with version "", the guide's own branch; env is added to the
// script's environment (serveGuideBranches').
func runGuideStep(ctx context.Context, t *testing.T, tree, step, version string, env ...string) (string, error) {
	t.Helper()
	line := strings.ReplaceAll(step, "GITHUB_USER="+guideUser, "GITHUB_USER="+contributor)
	if version != "" {
		line = branchVar.ReplaceAllLiteralString(line, "BRANCH="+version)
	}
	return bashIn(ctx, t, tree, line, env...)
}

// localForks are the local git repositories that stand in for forks of
// Kubernetes on GitHub, by module path (github.com/<user>/kubernetes), and
// the stamp (<YYYYMMDDhhmmss>-<12 hex>) of the commit each one's branch
// names.
type localForks map[string]string

func (f localForks) stamp(repo string) string { return f[repo] }

// serveGuideBranches makes the branches the guide's two runs name resolvable
// without the network: a bare git repository per fork (the contributor's,
// github.com/<contributor>/kubernetes, and kcp-dev's), each with the branch
// its run names at one commit of a go.mod like the fork's (module
// k8s.io/kubernetes), dated apart; and the environment that sends git there
// (url.<dir>.insteadOf in a git config of its own, every other https:// to
// a directory that does not exist) with a module cache of the test's. It
// returns the stamps go's pseudo-versions of those commits end with.
func serveGuideBranches(ctx context.Context, t *testing.T, steps rebasingGuide) (localForks, []string) {
	t.Helper()
	dir := t.TempDir()
	forks := localForks{}
	config := "[url \"file://" + filepath.Join(dir, "no-network") + "/\"]\n\tinsteadOf = https://\n"
	for i, run := range []struct{ step, repo, date string }{
		{steps.first, "github.com/" + contributor + "/kubernetes", "2026-06-15T12:00:00Z"},
		{steps.second, forkRepo, "2026-07-01T12:00:00Z"},
	} {
		m := branchVar.FindString(run.step)
		branch := strings.TrimPrefix(m, "BRANCH=")
		if branch == "" || strings.HasPrefix(branch, "v") {
			t.Fatalf("the guide's run %q names no branch", run.step)
		}
		work, bare := filepath.Join(dir, fmt.Sprintf("work-%d", i)), filepath.Join(dir, fmt.Sprintf("fork-%d.git", i))
		testfs.Write(t, filepath.Join(work, "go.mod"), "module k8s.io/kubernetes\n\ngo 1.24\n")
		repo := gitexec.Repo{Dir: work, Env: []string{"GIT_AUTHOR_DATE=" + run.date, "GIT_COMMITTER_DATE=" + run.date,
			"GIT_AUTHOR_NAME=rebaser", "GIT_AUTHOR_EMAIL=rebaser@localhost", "GIT_COMMITTER_NAME=rebaser", "GIT_COMMITTER_EMAIL=rebaser@localhost"}}
		for _, args := range [][]string{{"init", "-q"}, {"add", "go.mod"}, {"commit", "-q", "-m", "the rebase"}, {"init", "-q", "--bare", bare}, {"push", "-q", bare, "HEAD:refs/heads/" + branch}} {
			if _, err := repo.Run(ctx, args...); err != nil {
				t.Fatal(err)
			}
		}
		rev, err := repo.Run(ctx, "rev-parse", "HEAD")
		if err != nil {
			t.Fatal(err)
		}
		when, err := time.Parse(time.RFC3339, run.date)
		if err != nil {
			t.Fatal(err)
		}
		forks[run.repo] = when.UTC().Format("20060102150405") + "-" + strings.TrimSpace(string(rev))[:12]
		config += "[url \"file://" + bare + "\"]\n\tinsteadOf = https://" + run.repo + "\n"
	}
	testfs.Write(t, filepath.Join(dir, "gitconfig"), config)
	return forks, []string{
		"GIT_CONFIG_GLOBAL=" + filepath.Join(dir, "gitconfig"), "GIT_CONFIG_NOSYSTEM=1",
		"GOMODCACHE=" + filepath.Join(dir, "modcache"), "GOFLAGS=-mod=mod -modcacherw",
		"GOPRIVATE=github.com", "GONOSUMDB=github.com", "GOSUMDB=off",
	}
}

// checkMoved says which fork replace of before is not, in after, at the
// same directory of repo with the version stamp.
func checkMoved(before, after map[string]string, repo, stamp string) []string {
	var problems []string
	for _, m := range goModules {
		old, moved, err := parseGoMods(m, before, after)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		got := map[string]*modfile.Replace{}
		for _, r := range moved.Replace {
			got[r.Old.Path] = r
		}
		for _, r := range old.Replace {
			if !isFork(r.New.Path) {
				continue
			}
			want := repo + strings.TrimPrefix(r.New.Path, forkRepo)
			switch g := got[r.Old.Path]; {
			case g == nil:
				problems = append(problems, fmt.Sprintf("%s: %s: no replace left", m, r.Old.Path))
			case g.New.Path != want || !strings.HasSuffix(g.New.Version, stamp):
				problems = append(problems, fmt.Sprintf("%s: %s => %s %s, want %s at %s", m, r.Old.Path, g.New.Path, g.New.Version, want, stamp))
			}
		}
	}
	return problems
}
