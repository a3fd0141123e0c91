package export

import (
	"bytes"
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"github.com/kcp-carry/kcp-carry/pkg/carry/verify"
	"github.com/kcp-carry/kcp-carry/pkg/util/markdown"
)

// The pull request texts: the fork's (PR.md), kcp's (kcp-dev-kcp/PR.md), in
// kcp's template and short, and EVIDENCE.md, which both link for the
// measurements.
var (
	//go:embed fork-pr.md.tmpl
	forkPRTemplate string
	//go:embed kcp-pr.md.tmpl
	kcpPRTemplate string
	//go:embed evidence.md.tmpl
	evidenceTemplate string
)

// EvidenceFile is the long evidence beside PR.md.
const EvidenceFile = "EVIDENCE.md"

// releaseNote is both pull requests' release note: what operators see, and
// what they must do about what a kcp before the fix stored.
const releaseNote = `Fixed a crash ("fatal error: concurrent map writes") of kcp shards when wildcard partial-metadata LISTs (kcp's garbage collector, quota and other metadata informers) run concurrently, and such LISTs adding kcp.io/original-api-version: "" to built-in objects. Objects that a kcp before this fix stored with kcp.io/original-api-version: "" keep it after the upgrade: find and remove it with "carry scrub" (dry run by default; --apply removes only the empty value), or per object with "kubectl annotate <resource> <name> kcp.io/original-api-version-".`

// prData is what the templates see.
type prData struct {
	Repo        string // github.com/kcp-dev/kubernetes
	Base        string // the pinned fork commit
	BaseBranch  string
	Pin         string // the pinned pseudo-version, as in kcp's go.mod files
	ForkVersion string
	Total       int
	Patches     []prPatch
	ReleaseNote string
	// Verify is the fix's step of `carry verify` (PR.md) or all of it
	// (EVIDENCE.md); "" when not run.
	Verify       string
	VerifySource string
	Suite        *evidenceFile
	SuiteSource  string
	// Duel is the summary of a duel document given as the suite report
	// (markdown); "" otherwise.
	Duel        string
	Benchstat   *evidenceFile
	BenchSource string
	// KCPPatches are the companion change for kcp-dev/kcp.
	KCPPatches []KCPPatchResult
}

type prPatch struct {
	N       int
	File    string
	Subject string
	Module  string
	Added   int
	Deleted int
	// TestFiles are the fork paths of the _test.go files it adds or changes.
	TestFiles []testFile
}

type testFile struct {
	Path string
	New  bool
}

// prTexts are the rendered pull request texts.
type prTexts struct {
	fork, kcp, evidence []byte
}

func renderPRs(res *Result, all []*exported, ev *evidence, o Options, pin string) (*prTexts, error) {
	d := prData{
		Repo: res.Repo, Base: res.Base, BaseBranch: o.BaseBranch, Pin: pin, ForkVersion: o.ForkVersion,
		Total: len(all), ReleaseNote: releaseNote,
		VerifySource: ev.verifySource,
		Suite:        ev.suite, SuiteSource: ev.suiteSource,
		Benchstat: ev.benchstat, BenchSource: ev.benchstatSource,
		KCPPatches: res.KCPPatches,
	}
	for i, e := range all {
		p := prPatch{
			N: i + 1, File: e.res.File, Subject: e.res.Subject, Module: e.res.Module,
			Added: e.res.Added, Deleted: e.res.Deleted,
		}
		for _, f := range e.out.Files {
			if !f.IsDelete && strings.HasSuffix(f.NewName, "_test.go") {
				p.TestFiles = append(p.TestFiles, testFile{Path: f.NewName, New: f.IsNew})
			}
		}
		d.Patches = append(d.Patches, p)
	}
	if ev.suite != nil && ev.suite.Duel != nil {
		d.Duel = strings.TrimRight(ev.suite.Duel.Summary(), "\n")
	}
	var texts prTexts
	var err error
	if ev.verify != nil {
		// PR.md quotes how the fix's tests fail without it.
		if fix := ev.verify.Steps[len(ev.verify.Steps)-1]; fix.Without != nil {
			var b strings.Builder
			fix.Without.WriteText(&b)
			d.Verify = strings.TrimRight(b.String(), "\n")
		}
	}
	if texts.fork, err = render("PR.md", forkPRTemplate, d); err != nil {
		return nil, err
	}
	if texts.kcp, err = render("kcp-dev-kcp/PR.md", kcpPRTemplate, d); err != nil {
		return nil, err
	}
	if ev.verify != nil {
		d.Verify = verifyText(ev.verify)
	}
	if texts.evidence, err = render(EvidenceFile, evidenceTemplate, d); err != nil {
		return nil, err
	}
	return &texts, nil
}

func verifyText(r *verify.Report) string {
	var b bytes.Buffer
	r.WriteText(&b)
	return strings.TrimRight(b.String(), "\n")
}

func render(name, text string, d prData) ([]byte, error) {
	t, err := template.New(name).Funcs(template.FuncMap{
		"fence": markdown.Fence,
		"code":  markdown.CodeSpan,
	}).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%s template: %w", name, err)
	}
	var out bytes.Buffer
	if err := t.Execute(&out, d); err != nil {
		return nil, fmt.Errorf("%s template: %w", name, err)
	}
	// Collapse the blank lines the template's conditionals leave.
	text = regexp.MustCompile(`\n{3,}`).ReplaceAllString(out.String(), "\n\n")
	return []byte(strings.TrimSpace(text) + "\n"), nil
}
