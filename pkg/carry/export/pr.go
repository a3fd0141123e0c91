package export

import (
	"bytes"
	"embed"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"golang.org/x/mod/module"

	"github.com/kcp-carry/kcp-carry/pkg/util/markdown"
)

// The pull request texts, in kcp's template and short: the fork's (PR.md)
// and those of its later pull requests (kcp-dev-kubernetes-<name>/PR.md,
// from fork-pr-<name>.md.tmpl), and one per kcp pull request
// (kcp-dev-kcp/<n>-<name>/PR.md), from kcp-pr-<name>.md.tmpl, or, for a pull
// request without one yet, from its commit messages (generic-kcp-pr.md.tmpl);
// the comment for kcp-dev/kcp#4551 that gives operators the mitigation
// (CommentFile, from issue-4551-comment.md.tmpl); and the pull request for
// kubernetes/kubernetes (kubernetes-kubernetes/PR.md, in Kubernetes' template,
// from kubernetes-pr.md.tmpl).
//
// A kcp pull request may have an appendix too (AppendixFile, from
// kcp-appendix-<name>.md.tmpl): detail its text leaves out, which the
// submitter posts as the pull request's first comment.
//
//go:embed fork-pr.md.tmpl fork-pr-*.md.tmpl kcp-pr-*.md.tmpl kcp-appendix-*.md.tmpl generic-kcp-pr.md.tmpl issue-4551-comment.md.tmpl kubernetes-pr.md.tmpl kubernetes-pr-*.md.tmpl
var templates embed.FS

// AppendixFile is a kcp pull request's appendix, beside its PRFile: to post
// as the pull request's first comment, which its text points to.
const AppendixFile = "APPENDIX.md"

// CommentFile is the comment for kcp-dev/kcp#4551 until the fix reaches
// kcp: the mitigation, stock kcp with --watch-cache=false, how to check it
// and what it leaves stored, and, from WatchCacheOffFile, what it was
// measured to survive and to cost.
const CommentFile = "kcp-dev-kcp-4551-comment.md"

// KCPModules are kcp's modules that pin the fork, as kcp's tree lays them
// out: the root, the CLI docs generator and the virtual workspace framework.
var KCPModules = []string{".", "docs/generators/cli-doc", "staging/src/github.com/kcp-dev/virtual-workspace-framework"}

// KCPBumpScript is kcp's own pin bump, which moves the fork replaces of
// KCPModules to the fork commit BRANCH names (a branch or a pseudo-version)
// once the pin bump's first commit fixed it.
const KCPBumpScript = "hack/bump-k8s.sh"

// prData is what the templates see.
type prData struct {
	Repo       string // github.com/kcp-dev/kubernetes
	Base       string // the pinned fork commit, as locate names it
	BaseBranch string
	// BaseRev is the pinned commit's 12 hex digits and BaseStamp its
	// pseudo-version's timestamp and commit (20260602065202-e006560fc76a).
	BaseRev, BaseStamp string
	ForkVersion        string
	// ForkPR is the number of the fork's pull request (kcp-dev/kubernetes#N);
	// 0 until the submitter opened it.
	ForkPR int
	// FixTitle is the fix's pull request's title.
	FixTitle string
	// Merged are the fork's later pull requests ForkVersion holds too, by
	// name.
	Merged map[string]bool
	// Patches are the fork pull request's being written: the fix's, but
	// for a later one's text.
	Patches []prPatch
	// FixTest is the last test file the pull request's patches add or
	// change; "" when none does.
	FixTest string
	// Verify is how the pull request's tests fail without it, from the
	// verify run this export ran or quotes; "" when none.
	Verify string
	// BumpCommand is the pin bump as the submitter runs it in kcp's tree
	// (KCPBumpScript with BRANCH the fork version, or a placeholder), and
	// PinCheck the grep that shows the old commit gone from every go.mod and
	// go.sum of KCPModules.
	BumpCommand, PinCheck string
	// KCP is the kcp pull request being written.
	KCP *KCPPRResult
	// Upstream is the pull request for kubernetes/kubernetes being written,
	// UpstreamBefore those the last one needs.
	Upstream       *UpstreamPRResult
	UpstreamBefore []UpstreamPRResult
	// RaceSuite is kcp's whole shared e2e suite under the race target, from
	// race-suite-run.json; nil until that file has figures.
	RaceSuite *RaceSuiteRun
	// WatchCacheOff is the mitigation measured, from WatchCacheOffFile; nil
	// until that file has figures.
	WatchCacheOff *WatchCacheOffRun
}

type prPatch struct {
	N       int
	Subject string
	// Files are the names of the files it changes, as markdown code spans
	// (the pull request shows their paths).
	Files string
}

// prTexts are the rendered files, by path relative to --out.
type prTexts map[string][]byte

// pinStamp is the timestamp and commit of a pseudo-version.
var pinStamp = regexp.MustCompile(`([0-9]{14})-([0-9a-f]{12})$`)

// renderPRs renders every pull request's text, in one loop over prs, and
// the comment for kcp-dev/kcp#4551; a pull request exported with a red
// presubmit (--allow-red) gets redNote at the end of its text.
func renderPRs(st *exportState, prs []*PullRequest, pin string) (prTexts, error) {
	stamp := pinStamp.FindStringSubmatch(pin)
	if !module.IsPseudoVersion(pin) || stamp == nil {
		return nil, fmt.Errorf("the carry's fork pin %s is not a pseudo-version: the pin bump needs one", pin)
	}
	o, res := st.o, st.res
	d := prData{
		Repo: res.Repo, Base: res.Base, BaseBranch: o.BaseBranch, ForkVersion: o.ForkVersion, ForkPR: o.ForkPR,
		BaseRev: stamp[2], BaseStamp: stamp[0], FixTitle: res.Title, Merged: map[string]bool{},
	}
	for _, name := range o.ForkVersionIncludes {
		d.Merged[name] = true
	}
	d.BumpCommand, d.PinCheck = pinBump(o.ForkVersion, d.BaseRev)
	var err error
	if d.RaceSuite, err = loadRaceSuiteRun(); err != nil {
		return nil, err
	}
	if d.WatchCacheOff, err = loadWatchCacheOffRun(); err != nil {
		return nil, err
	}
	texts := prTexts{}
	if texts[CommentFile], err = render("issue-4551-comment.md.tmpl", d); err != nil {
		return nil, err
	}
	for i, pr := range prs {
		rendered, err := pr.kind.render(d, st, pr)
		if err != nil {
			return nil, err
		}
		for name, text := range rendered {
			texts[name] = text
		}
		if r := res.PullRequests[i]; presubmitRed(r) != "" {
			texts[pr.TextFile()] = append(texts[pr.TextFile()], redNote(r)...)
		}
	}
	return texts, nil
}

// forkPR sets what d says of the fork pull request pr: its patches, the
// last test file they change, and how its tests fail without it, from the
// verify step of its last patch.
func (d *prData) forkPR(pr *forkPR, v *verifyEvidence) {
	d.Patches, d.FixTest, d.Verify = nil, "", ""
	for i, e := range pr.patches {
		var files []string
		for _, f := range e.res.Files {
			files = append(files, markdown.CodeSpan(path.Base(f)))
		}
		d.Patches = append(d.Patches, prPatch{N: i + 1, Subject: e.res.Subject, Files: strings.Join(files, ", ")})
		for _, f := range e.out.Files {
			if !f.IsDelete && strings.HasSuffix(f.NewName, "_test.go") {
				d.FixTest = f.NewName
			}
		}
	}
	if v.report == nil {
		return
	}
	last := pr.patches[len(pr.patches)-1]
	for _, step := range v.report.Steps {
		if step.Module == last.mod.in.Module && step.Patch == last.carried.Name && step.Without != nil {
			var b strings.Builder
			step.Without.WriteText(&b)
			d.Verify = strings.TrimRight(b.String(), "\n")
		}
	}
}

// ForkVersionPlaceholder stands for the fork version in the pin bump's
// command until the fork merged the patches (--fork-version).
const ForkVersionPlaceholder = "v0.0.0-<date>-<commit>"

// pinBump is kcp's pin bump command for forkVersion (the placeholder when
// empty) and the check that no go.mod or go.sum of KCPModules names the
// old commit rev any more.
func pinBump(forkVersion, rev string) (command, check string) {
	if forkVersion == "" {
		forkVersion = ForkVersionPlaceholder
	}
	var files []string
	for _, m := range KCPModules {
		files = append(files, path.Join(m, "go.mod"), path.Join(m, "go.sum"))
	}
	return "BRANCH=" + forkVersion + " ./" + KCPBumpScript,
		"grep -c " + rev + " " + strings.Join(files, " ") + "   # 0 in each"
}

// Touching are the pull request's patches that change file, in order.
func (r KCPPRResult) Touching(file string) []KCPPatchResult {
	var ps []KCPPatchResult
	for _, p := range r.Patches {
		if slices.Contains(p.Files, file) {
			ps = append(ps, p)
		}
	}
	return ps
}

// NotTouching are the pull request's other patches, in order.
func (r KCPPRResult) NotTouching(file string) []KCPPatchResult {
	var ps []KCPPatchResult
	for _, p := range r.Patches {
		if !slices.Contains(p.Files, file) {
			ps = append(ps, p)
		}
	}
	return ps
}

// TestPackage is the package of the first test file the pull request's
// patches change, as go test names it (./pkg/informer/); "" if none.
func (r KCPPRResult) TestPackage() string {
	for _, p := range r.Patches {
		for _, f := range p.Files {
			if strings.HasSuffix(f, "_test.go") {
				return "./" + path.Dir(f) + "/"
			}
		}
	}
	return ""
}

func render(name string, d prData) ([]byte, error) {
	t, err := template.New(name).Funcs(template.FuncMap{
		"code": markdown.CodeSpan,
		// codes is a list of code spans: `a`, `b`.
		"codes": func(ss []string) string {
			var spans []string
			for _, s := range ss {
				spans = append(spans, markdown.CodeSpan(s))
			}
			return strings.Join(spans, ", ")
		},
	}).ParseFS(templates, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var out bytes.Buffer
	if err := t.Execute(&out, d); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// Collapse the blank lines the template's conditionals leave.
	text := regexp.MustCompile(`\n{3,}`).ReplaceAllString(out.String(), "\n\n")
	return []byte(strings.TrimSpace(text) + "\n"), nil
}
