package export

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"text/template"

	"golang.org/x/mod/module"

	"github.com/kcp-carry/kcp-carry/pkg/util/markdown"
)

// The pull request texts, in kcp's template and short: the fork's (PR.md),
// and one per kcp pull request (kcp-dev-kcp/<n>-<name>/PR.md), from
// kcp-pr-<name>.md.tmpl, or, for a pull request without one yet, from its
// commit messages (generic-kcp-pr.md.tmpl). bump-fork-pin.sh.tmpl is the
// pin bump the kcp pull request that moves the pin runs.
//
//go:embed fork-pr.md.tmpl kcp-pr-*.md.tmpl generic-kcp-pr.md.tmpl bump-fork-pin.sh.tmpl
var templates embed.FS

// BumpScript is the pin bump's script in --out/kcp-dev-kcp/.
const BumpScript = "bump-fork-pin.sh"

// prData is what the templates see.
type prData struct {
	Repo       string // github.com/kcp-dev/kubernetes
	Base       string // the pinned fork commit, as locate names it
	BaseBranch string
	// BaseRev is the pinned commit's 12 hex digits and BaseStamp its
	// pseudo-version's timestamp and commit (20260602065202-e006560fc76a).
	BaseRev, BaseStamp string
	ForkVersion        string
	Patches            []prPatch
	// FixTest is the last test file the series adds or changes, the fix's;
	// "" when none does.
	FixTest string
	// Verify is how the fix's tests fail without it, from the verify run
	// this export ran or quotes; "" when none.
	Verify string
	// BumpCommand is the pin bump as the submitter runs it in kcp's tree.
	BumpCommand string
	// KCP is the kcp pull request being written.
	KCP *KCPPRResult
}

type prPatch struct {
	N       int
	Subject string
	// Files are the fork paths it changes, as markdown code spans.
	Files string
}

// prTexts are the rendered files, by path relative to --out.
type prTexts map[string][]byte

// pinStamp is the timestamp and commit of a pseudo-version.
var pinStamp = regexp.MustCompile(`([0-9]{14})-([0-9a-f]{12})$`)

func renderPRs(res *Result, all []*exported, v *verifyEvidence, o Options, pin string) (prTexts, error) {
	stamp := pinStamp.FindStringSubmatch(pin)
	if !module.IsPseudoVersion(pin) || stamp == nil {
		return nil, fmt.Errorf("the carry's fork pin %s is not a pseudo-version: the pin bump needs one", pin)
	}
	d := prData{
		Repo: res.Repo, Base: res.Base, BaseBranch: o.BaseBranch, ForkVersion: o.ForkVersion,
		BaseRev: stamp[2], BaseStamp: stamp[0],
	}
	forkVersion := o.ForkVersion
	if forkVersion == "" {
		forkVersion = "v0.0.0-<date>-<commit>"
	}
	d.BumpCommand = BumpScript + " . " + forkVersion
	for i, e := range all {
		var files []string
		for _, f := range e.res.Files {
			files = append(files, markdown.CodeSpan(f))
		}
		d.Patches = append(d.Patches, prPatch{N: i + 1, Subject: e.res.Subject, Files: strings.Join(files, ", ")})
	}
	for _, e := range all {
		for _, f := range e.out.Files {
			if !f.IsDelete && strings.HasSuffix(f.NewName, "_test.go") {
				d.FixTest = f.NewName
			}
		}
	}
	if v.report != nil {
		// PR.md quotes how the fix's tests fail without it.
		if fix := v.report.Steps[len(v.report.Steps)-1]; fix.Without != nil {
			var b strings.Builder
			fix.Without.WriteText(&b)
			d.Verify = strings.TrimRight(b.String(), "\n")
		}
	}
	texts := prTexts{}
	var err error
	if texts[PRFile], err = render("fork-pr.md.tmpl", d); err != nil {
		return nil, err
	}
	for i := range res.KCPPRs {
		pr := &res.KCPPRs[i]
		d.KCP = pr
		name := "kcp-pr-" + strings.SplitN(pr.Name, "-", 2)[1] + ".md.tmpl"
		if _, err := fs.Stat(templates, name); errors.Is(err, fs.ErrNotExist) {
			name, pr.Generic = "generic-kcp-pr.md.tmpl", true
		}
		if texts[pr.PR], err = render(name, d); err != nil {
			return nil, err
		}
	}
	if texts[KCPDir+"/"+BumpScript], err = render("bump-fork-pin.sh.tmpl", d); err != nil {
		return nil, err
	}
	return texts, nil
}

func render(name string, d prData) ([]byte, error) {
	t, err := template.New(name).Funcs(template.FuncMap{
		"code": markdown.CodeSpan,
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
