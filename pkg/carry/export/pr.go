package export

import (
	"bytes"
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"github.com/kcp-carry/kcp-carry/pkg/util/markdown"
)

// prTemplate is PR.md. The problem, root cause and risk are this carry's
// (their numbers are the README's); the patch list, the fix and test
// paragraphs and all measurements are filled in from the exported patches
// and the evidence files.
//
//go:embed pr.md.tmpl
var prTemplate string

// prData is what pr.md.tmpl sees.
type prData struct {
	Repo    string // github.com/kcp-dev/kubernetes
	RepoURL string // https://github.com/kcp-dev/kubernetes
	Base    string
	Total   int
	Modules []prModule
	Patches []prPatch
	// Verify is `carry verify`'s text output; "" when not run.
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

type prModule struct {
	Module string
	Dir    string
	Count  int
	// Requires lists the carried modules exported before this one because
	// its go.mod requires them.
	Requires []string
}

type prPatch struct {
	N       int
	File    string
	Subject string
	Module  string
	Added   int
	Deleted int
	// Fix is the paragraph of the body that says what the patch does;
	// Tests the paragraphs about its tests; both markdown-escaped.
	Fix   string
	Tests string
	// TestFiles are the fork paths of the _test.go files it adds or changes.
	TestFiles []testFile
}

type testFile struct {
	Path string
	New  bool
}

func renderPR(res *Result, all []*exported, ev *evidence) ([]byte, error) {
	d := prData{
		Repo: res.Repo, Base: res.Base, Total: len(all),
		Verify: "", VerifySource: ev.verifySource,
		Suite: ev.suite, SuiteSource: ev.suiteSource,
		Benchstat: ev.benchstat, BenchSource: ev.benchstatSource,
		KCPPatches: res.KCPPatches,
	}
	if strings.HasPrefix(res.Repo, "github.com/") {
		d.RepoURL = "https://" + res.Repo
	}
	for _, m := range res.Modules {
		pm := prModule{Module: m.Module, Dir: dirOrRoot(m.Dir), Count: len(m.Patches), Requires: m.Requires}
		d.Modules = append(d.Modules, pm)
	}
	for i, e := range all {
		fix, tests := bodyParagraphs(e.out.Header.Body)
		p := prPatch{
			N: i + 1, File: e.res.File, Subject: e.res.Subject, Module: e.res.Module,
			Added: e.res.Added, Deleted: e.res.Deleted,
			Fix: fix, Tests: tests,
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
	if ev.verify != nil {
		var b bytes.Buffer
		ev.verify.WriteText(&b)
		d.Verify = strings.TrimRight(b.String(), "\n")
	}

	t, err := template.New("PR.md").Funcs(template.FuncMap{
		"fence": markdown.Fence,
		"code":  markdown.CodeSpan,
	}).Parse(prTemplate)
	if err != nil {
		return nil, fmt.Errorf("PR.md template: %w", err)
	}
	var out bytes.Buffer
	if err := t.Execute(&out, d); err != nil {
		return nil, fmt.Errorf("PR.md template: %w", err)
	}
	// Collapse the blank lines the template's conditionals leave.
	text := regexp.MustCompile(`\n{3,}`).ReplaceAllString(out.String(), "\n\n")
	return []byte(strings.TrimSpace(text) + "\n"), nil
}

var (
	trailerRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*: \S`)
	testsRE   = regexp.MustCompile(`^(The (new |added )?tests?|Tests?)\b`)
)

// bodyParagraphs picks from a commit message body (the part after the
// subject) the paragraph describing the change and those describing the
// tests. The convention of the carry's messages: problem first, then the
// change, then the tests ("The new tests ..."), then trailers. So the fix
// is the last paragraph that is neither about tests nor a trailer block,
// and the tests are the paragraphs starting with "The new tests", "The
// tests" or "Tests". Both come back unwrapped (GitHub renders a line break
// in a PR description as a break) and markdown-escaped.
func bodyParagraphs(body string) (fix, tests string) {
	var testParas []string
	for _, para := range strings.Split(strings.TrimSpace(body), "\n\n") {
		para = strings.TrimSpace(para)
		if para == "" || isTrailerBlock(para) {
			continue
		}
		if testsRE.MatchString(para) {
			testParas = append(testParas, markdownText(para))
			continue
		}
		fix = markdownText(para)
	}
	return fix, strings.Join(testParas, "\n\n")
}

func isTrailerBlock(para string) bool {
	for _, line := range strings.Split(para, "\n") {
		if !trailerRE.MatchString(line) {
			return false
		}
	}
	return true
}

// markdownText joins a paragraph's lines and escapes the characters
// markdown would read as markup (a `<carry>` would vanish as an HTML tag,
// `/clusters/*/` could start emphasis).
func markdownText(para string) string {
	var words []string
	for _, line := range strings.Split(para, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			words = append(words, line)
		}
	}
	text := strings.Join(words, " ")
	var b strings.Builder
	for _, r := range text {
		if strings.ContainsRune("\\`*_<>[]", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
