// Package export turns the carry into pull requests against the fork
// repository (github.com/kcp-dev/kubernetes): git format-patch series with
// fork-repository paths, and a PR.md each that says what broke, why, what
// the patches change, how they were tested and what the risk is. The fix's
// pull request is at the top of --out; staging-patches/pull-requests splits
// later ones off the series (ForkPRsFile), each numbered from 1 across the
// carried modules in its own directory.
//
// The series is produced by git itself. A throwaway repository holds the
// pristine fork modules (the go.sum-verified zips at the go.mod pins) at
// their fork paths; each carry patch is applied with
// `git am --directory=<fork dir>` and the branch is written out with
// `git format-patch` (see FormatPatchArgs). Before anything is put in
// place, the written files are checked: subjects follow the UPSTREAM:
// convention, author, date, subject and body are those of the carry
// patches, every path lies in its module's fork directory, and applying the
// written series to the pristine tree gives exactly the trees `carry overlay`
// builds.
//
// Order: modules in carryset.DependencyOrder of their pristine go.mod files
// (k8s.io/apimachinery before k8s.io/apiserver), each module's patches in
// series order; the fork's pull requests split that order.
package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/mod/module"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcppatches"
	"github.com/kcp-carry/kcp-carry/pkg/carry/modcache"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/carry/verify"
	"github.com/kcp-carry/kcp-carry/pkg/util/atomicfile"
)

// PRFile is the name of the pull request description in the output.
const PRFile = "PR.md"

// Options configures Run. Carry (or Root, to load it) and OutDir are
// required.
type Options struct {
	// Carry is the carry to export; nil loads the carry of Root.
	Carry *carryset.Carry
	// Root is the kcp-carry repository.
	Root string
	// OutDir receives the patches and PR.md. It must not exist or be empty,
	// unless Force.
	OutDir string
	Force  bool
	// VerifyReport is a `carry verify --json` report to quote in PR.md. If
	// empty, Run runs verify.Run (go test -race of the carry's packages,
	// one patch at a time: minutes) unless NoVerify, in which case PR.md
	// quotes no test run. A report that is not verified (or a verify run
	// that fails) stops the export.
	VerifyReport string
	NoVerify     bool
	// KCPTrees are kcp source trees kcp-patches/ must apply to with git am
	// (checked on scratch copies) before it is exported.
	KCPTrees []string
	// Author is the person submitting the pull requests: every patch's
	// author. Required; the export never invents one (see UserIdentity).
	Author Identity
	// Signoff adds Author's Signed-off-by to every patch, as `git
	// format-patch -s`: only the person submitting can certify the DCO.
	Signoff bool
	// BaseBranch is the fork branch the pull request targets: the rebase
	// branch (kcp-<kubernetes version>) that holds the pinned commit.
	BaseBranch string
	// ForkVersion is the fork's pseudo-version with these patches merged,
	// which kcp's pull request pins; empty until the fork merged them.
	ForkVersion string
	// ForkPR is the number of the fork's pull request, which kcp's texts
	// link (kcp-dev/kubernetes#N); 0 until it is opened, and then they say
	// that it comes first.
	ForkPR int
	// ForkVersionIncludes names the fork's later pull requests
	// (ForkPRsFile) that ForkVersion holds too, whose effect on kcp the pin
	// bump's text then says.
	ForkVersionIncludes []string
	// PresubmitReport is a `carry presubmit --json` report: a pull request
	// whose presubmit is red there is refused, unless AllowRed, and then its
	// text says so. Empty: no presubmit is checked (the export says so).
	PresubmitReport string
	AllowRed        bool
	// Progress receives a line per step; nil discards.
	Progress io.Writer
}

// Result describes an export.
type Result struct {
	OutDir string `json:"outDir"`
	// Repo is the fork repository and Base the commit (or tag) the
	// series applies to.
	Repo    string         `json:"repo"`
	Base    string         `json:"base"`
	Modules []ModuleResult `json:"modules"`
	// Patches are the fix's pull request, at the top of --out.
	Patches []PatchResult `json:"patches"`
	// ForkPRs are the fork's further pull requests (ForkPRsFile), in
	// merge order, each in --out/kcp-dev-kubernetes-<name>/.
	ForkPRs []ForkPRResult `json:"forkPRs,omitempty"`
	// KCPPRs are kcp-patches/, the companion pull requests for
	// kcp-dev/kcp in merge order, each written to
	// --out/kcp-dev-kcp/<n>-<name>/ with its PR.md.
	KCPPRs []KCPPRResult `json:"kcpPRs,omitempty"`
	// Upstream is upstream-patches/kubernetes, the pull request for
	// kubernetes/kubernetes, in --out/kubernetes-kubernetes/.
	Upstream *UpstreamPRResult `json:"upstream,omitempty"`
	// UpstreamBefore are the Kubernetes pull requests Upstream needs, one
	// per staging module, merged before it (client-go's).
	UpstreamBefore []UpstreamPRResult `json:"upstreamBefore,omitempty"`
	// PR is the path of PR.md (the fork's pull request), Title the title it
	// takes (the fix's subject), and Comment the path of the comment for
	// kcp-dev/kcp#4551 with the mitigation (CommentFile).
	PR      string `json:"pr"`
	Title   string `json:"title"`
	Comment string `json:"comment"`
	// ForkPR is the fork's pull request the kcp texts link, 0 for none.
	ForkPR int `json:"forkPR,omitempty"`
	// ForkVersionIncludes are the later fork pull requests the pin bump's
	// fork version holds.
	ForkVersionIncludes []string `json:"forkVersionIncludes,omitempty"`
	// Author is who the patches are by; SignedOff says whether they carry
	// the author's Signed-off-by.
	Author    string `json:"author"`
	SignedOff bool   `json:"signedOff"`
	// Verify is the verify run PR.md quotes: the --verify-report file, or
	// "carry verify" when the export ran it; empty with --no-verify.
	Verify string `json:"verify,omitempty"`
	// PullRequests are every pull request written, in merge order, with
	// its presubmit as --presubmit-report gives it (not run without one).
	PullRequests []PullRequestResult `json:"pullRequests"`
}

// ModuleResult is one carried module, in export order.
type ModuleResult struct {
	Module string         `json:"module"`
	Fork   module.Version `json:"fork"`
	Location
	// Requires are the carried modules its go.mod requires, which are
	// exported before it.
	Requires []string `json:"requires,omitempty"`
	// Patches are the exported files of the module's patches, relative
	// to --out.
	Patches []string `json:"patches"`
}

// PatchResult is one exported patch.
type PatchResult struct {
	// File is the exported file, relative to --out (0001-....patch, or
	// kcp-dev-kubernetes-<name>/0001-....patch for a later pull request).
	File   string `json:"file"`
	Module string `json:"module"`
	// Source is the carry patch it was made from.
	Source  string `json:"source"`
	Subject string `json:"subject"`
	// Files are the fork-repository paths the patch changes.
	Files   []string `json:"files"`
	Added   int      `json:"added"`
	Deleted int      `json:"deleted"`
}

// module is one carried module during the export.
type carried struct {
	in  *carryset.Carried
	loc Location
	// requires are the carried modules its pristine go.mod requires.
	requires []string
}

// exported is one written patch with its source.
type exported struct {
	mod *carried
	// carried is the patch in staging-patches/, src the same with the
	// submitter's identity (stampPatch), which git am applied.
	carried *series.Patch
	src     *series.Patch
	out     *series.Patch
	path    string
	res     PatchResult
	// commit is the commit git am made of it in the export's repository.
	commit string
}

func (o Options) resolve() (Options, error) {
	c := o
	if c.Carry == nil && c.Root == "" {
		return c, errors.New("export: Options.Carry or Options.Root is required")
	}
	if c.OutDir == "" {
		return c, errors.New("--out: an output directory is required")
	}
	if c.Author.Name == "" || c.Author.Email == "" {
		return c, errNoIdentity
	}
	if c.BaseBranch == "" {
		return c, errors.New("--base-branch: name the fork branch the pull request targets, the rebase branch that holds the pinned commit (kcp-<kubernetes version>; see docs/upstream.md)")
	}
	if c.ForkVersion != "" && !module.IsPseudoVersion(c.ForkVersion) {
		return c, fmt.Errorf("--fork-version %q: want the fork commit's pseudo-version, as in go.mod (v0.0.0-<date>-<commit>)", c.ForkVersion)
	}
	if len(c.ForkVersionIncludes) > 0 && c.ForkVersion == "" {
		return c, fmt.Errorf("--fork-version-includes %s: give --fork-version too, the fork version that holds it", c.ForkVersionIncludes[0])
	}
	if c.ForkPR < 0 {
		return c, fmt.Errorf("--fork-pr %d: want the number of the fork's pull request (kcp-dev/kubernetes#N), a positive integer", c.ForkPR)
	}
	var err error
	if c.OutDir, err = filepath.Abs(c.OutDir); err != nil {
		return c, err
	}
	if c.Carry == nil {
		if c.Carry, err = carryset.Load(c.Root); err != nil {
			return c, err
		}
	}
	c.Root = c.Carry.Root
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c, nil
}

// Run exports the carry into opts.OutDir. Nothing is written there unless
// everything succeeded: the files are made in a temporary directory next to
// OutDir and renamed into place.
func Run(ctx context.Context, opts Options) (res *Result, err error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if err := checkOutDir(o.OutDir, o.Force); err != nil {
		return nil, err
	}
	if err := o.Carry.CheckZipHashes(); err != nil {
		return nil, err
	}
	if err := o.Carry.CheckNotEmpty(); err != nil {
		return nil, err
	}
	ev, err := loadVerifyReport(o)
	if err != nil {
		return nil, err
	}
	report, err := loadPresubmitReport(o.PresubmitReport)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "carry-export-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	g := newGitRepo(filepath.Join(work, "fork"))
	mods, repo, base, err := pristineFork(ctx, o.Carry, g.Dir)
	if err != nil {
		return nil, err
	}
	if err := g.initBase(ctx); err != nil {
		return nil, err
	}
	src, err := loadSources(o.Carry, mods)
	if err != nil {
		return nil, err
	}
	for _, name := range o.ForkVersionIncludes {
		if !slices.ContainsFunc(src.forkPRs[1:], func(pr *forkPR) bool { return pr.name == name }) {
			return nil, fmt.Errorf("--fork-version-includes %s: no such later fork pull request in %s", name, filepath.Join(o.Carry.PatchesDir, ForkPRsFile))
		}
	}
	prs, err := src.pullRequests()
	if err != nil {
		return nil, err
	}
	if len(o.KCPTrees) > 0 && src.kcp == nil {
		return nil, fmt.Errorf("--kcp-source: %s has no %s/ to apply", o.Root, kcppatches.Dir)
	}
	presubmits, err := checkPresubmits(prs, report, o.PresubmitReport, o.AllowRed, o.Progress)
	if err != nil {
		return nil, err
	}

	tmp, err := atomicfile.TempDirFor(o.OutDir)
	if err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	res = &Result{OutDir: o.OutDir, Repo: repo, Base: base, Author: o.Author.String(), SignedOff: o.Signoff, ForkPR: o.ForkPR, ForkVersionIncludes: o.ForkVersionIncludes, PullRequests: presubmits}
	st := &exportState{o: o, tmp: tmp, work: work, g: g, repo: repo, base: base, from: "base", res: res, ev: ev, kcpEarlier: map[string]string{}}
	progress := func(format string, args ...any) { fmt.Fprintf(o.Progress, format+"\n", args...) }
	// Each upstream's series applies as a whole to what it is cut on.
	if st.kcpApplies, err = checkKCPTrees(ctx, src, o.KCPTrees, progress); err != nil {
		return nil, err
	}
	if st.upstreamBase, err = checkUpstream(ctx, src, progress); err != nil {
		return nil, err
	}
	// Every pull request written, in merge order.
	for _, pr := range prs {
		if err := pr.kind.write(ctx, st, pr); err != nil {
			return nil, err
		}
	}
	for _, m := range mods {
		fmt.Fprintf(o.Progress, "%s: applied %d patches at %s/%s\n", m.in.Module, len(m.in.Series.Patches), repo, m.loc.Dir)
	}
	if err := checkRoundTrip(ctx, o.Root, g, mods, st.files); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Progress, "carry export: %d patches apply to the pristine fork and reproduce the overlay\n", len(st.all))

	if ev.report == nil && !o.NoVerify {
		fmt.Fprintln(o.Progress, "carry export: running carry verify (use --verify-report FILE to quote a saved report)")
		r, err := verify.Run(ctx, verify.Options{Carry: o.Carry, Progress: o.Progress})
		if err != nil {
			return nil, fmt.Errorf("carry verify: %w", err)
		}
		if !r.OK() {
			return nil, fmt.Errorf("carry verify: the carry is NOT verified: %s", strings.Join(r.Problems, "; "))
		}
		ev.report, ev.source = r, "carry verify"
	}
	res.Verify = ev.source

	for _, m := range mods {
		mr := ModuleResult{Module: m.in.Module, Fork: m.in.Fork, Location: m.loc, Requires: m.requires}
		for _, e := range st.all {
			if e.mod == m {
				mr.Patches = append(mr.Patches, e.res.File)
			}
		}
		res.Modules = append(res.Modules, mr)
	}
	res.Title = src.forkPRs[0].title()
	texts, err := renderPRs(st, prs, mods[0].in.Fork.Version)
	if err != nil {
		return nil, err
	}
	for name, text := range texts {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tmp, name)), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(tmp, name), text, 0o644); err != nil {
			return nil, err
		}
	}
	if err := install(tmp, o.OutDir, o.Force); err != nil {
		return nil, err
	}
	res.PR, res.Comment = filepath.Join(o.OutDir, PRFile), filepath.Join(o.OutDir, CommentFile)
	fmt.Fprintf(o.Progress, "carry export: wrote %d patches by %s%s, %s, %s, %d later fork pull requests, %d kcp pull requests and %d for Kubernetes to %s\n", len(st.all), o.Author, signedOff(o.Signoff), PRFile, CommentFile, len(res.ForkPRs), len(res.KCPPRs), upstreamCount(res), o.OutDir)
	for _, pr := range res.KCPPRs {
		if pr.Generic {
			fmt.Fprintf(o.Progress, "carry export: %s has no text of its own yet: written from its commit messages; choose its /kind, issue and release note before opening it\n", pr.PR)
		}
	}
	if run, _ := loadWatchCacheOffRun(); run == nil || !run.HasCost() {
		fmt.Fprintf(o.Progress, "carry export: %s quotes no cost of --watch-cache=false: pkg/carry/export/%s has no cost figures yet\n", CommentFile, WatchCacheOffFile)
	}
	if o.ForkPR == 0 {
		fmt.Fprintf(o.Progress, "carry export: kcp's texts name no fork pull request; once you opened it, export again with --fork-pr\n")
	}
	if o.ForkVersion == "" {
		fmt.Fprintf(o.Progress, "carry export: the pin bump leaves the fork version open; once the fork merged the patches, export again with --fork-version\n")
	}
	return res, nil
}

func upstreamCount(res *Result) int {
	if res.Upstream == nil {
		return 0
	}
	return 1 + len(res.UpstreamBefore)
}

func signedOff(signoff bool) string {
	if signoff {
		return ", signed off"
	}
	return ""
}

func dirOrRoot(dir string) string {
	if dir == "" {
		return "the repository root"
	}
	return dir + "/"
}

// checkOutDir refuses an output directory that exists and is not empty
// (unless force) or is not a directory.
func checkOutDir(dir string, force bool) error {
	entries, err := atomicfile.OutDirEntries("--out", dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 && !force {
		return fmt.Errorf("--out %s: exists and is not empty (%d entries); choose another directory or use --force to replace it", dir, len(entries))
	}
	return nil
}

// install moves the finished tmp directory to dir, replacing an empty
// directory, or a non-empty one when force.
func install(tmp, dir string, force bool) error {
	if err := checkOutDir(dir, force); err != nil {
		return err
	}
	if err := atomicfile.ReplaceDir(tmp, dir); err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	return nil
}

// locate maps every carried module to its fork location and checks that
// they all live in one repository at one commit: a pull request has one
// base.
func locate(ins []*carryset.Carried) (mods []*carried, repo, base string, err error) {
	var first *carried
	dirs := map[string]string{}
	for _, in := range ins {
		loc, err := Locate(in.Fork.Path)
		if err != nil {
			return nil, "", "", fmt.Errorf("%s: %w", in.Module, err)
		}
		m := &carried{in: in, loc: loc}
		if first == nil {
			first, repo, base = m, loc.Repo, Revision(in.Fork.Version)
		} else if loc.Repo != repo || Revision(in.Fork.Version) != base {
			return nil, "", "", fmt.Errorf("%s is pinned to %s@%s (repository %s at %s) but %s to %s@%s (repository %s at %s); one pull request needs one repository and commit: fix the replace directives in go.mod (`carry pins`)",
				first.in.Module, first.in.Fork.Path, first.in.Fork.Version, repo, base,
				in.Module, in.Fork.Path, in.Fork.Version, loc.Repo, Revision(in.Fork.Version))
		}
		if other, ok := dirs[loc.Dir]; ok {
			return nil, "", "", fmt.Errorf("%s and %s both map to %s in %s", other, in.Module, dirOrRoot(loc.Dir), repo)
		}
		dirs[loc.Dir] = in.Module
		mods = append(mods, m)
	}
	return mods, repo, base, nil
}

// pristineFork locates c's modules in the fork (locate), extracts their
// verified zips at their fork directories under dir (extractPristine) and
// orders them as those go.mod files require (orderModules).
func pristineFork(ctx context.Context, c *carryset.Carry, dir string) (mods []*carried, repo, base string, err error) {
	if mods, repo, base, err = locate(c.Modules); err != nil {
		return nil, "", "", err
	}
	if err := extractPristine(ctx, c.Root, mods, dir); err != nil {
		return nil, "", "", err
	}
	if mods, err = orderModules(mods, dir); err != nil {
		return nil, "", "", err
	}
	return mods, repo, base, nil
}

// extractPristine puts the verified zip of every module at its fork
// directory under repoDir, outer directories first (a module zip never
// contains the nested modules' files, and Extract wants an empty target).
func extractPristine(ctx context.Context, root string, mods []*carried, repoDir string) error {
	sorted := append([]*carried(nil), mods...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].loc.Dir < sorted[j].loc.Dir })
	for _, m := range sorted {
		where := fmt.Sprintf("%s (%s@%s)", m.in.Module, m.in.Fork.Path, m.in.Fork.Version)
		d, err := modcache.FetchVerified(ctx, root, m.in.Fork, m.in.ZipHash)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if err := modcache.Extract(filepath.Join(repoDir, filepath.FromSlash(m.loc.Dir)), m.in.Fork, d.Zip); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	return nil
}

// orderModules sorts mods into carryset.DependencyOrder using the go.mod files of
// the pristine trees under repoDir, and records the carried modules each
// requires.
func orderModules(mods []*carried, repoDir string) ([]*carried, error) {
	ordered, requires, err := carryset.OrderByGoMod(mods,
		func(m *carried) string { return m.in.Module },
		func(m *carried) string { return filepath.Join(repoDir, filepath.FromSlash(m.loc.Dir), "go.mod") })
	if err != nil {
		return nil, err
	}
	for _, m := range ordered {
		m.requires = requires[m.in.Module]
	}
	return ordered, nil
}

func patchResult(e *exported, root string) PatchResult {
	src := e.carried.Path
	if rel, err := filepath.Rel(root, src); err == nil && filepath.IsLocal(rel) {
		src = filepath.ToSlash(rel)
	}
	r := PatchResult{File: filepath.Base(e.path), Module: e.mod.in.Module, Source: src, Subject: e.out.Header.Title}
	for _, f := range e.out.Files {
		name := f.NewName
		if f.IsDelete {
			name = f.OldName
		}
		r.Files = append(r.Files, name)
		for _, fr := range f.TextFragments {
			r.Added += int(fr.LinesAdded)
			r.Deleted += int(fr.LinesDeleted)
		}
	}
	return r
}
