package export

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

// notForUpstream are strings no file the export writes may contain: this
// repository's name, its commands and files, and the words of its reports,
// which a kcp maintainer can neither follow nor reproduce.
var notForUpstream = []string{"kcp-carry", "carry scrub", "EVIDENCE.md", "pkg: github.com/", "Duel"}

// maxPRLines is how long a pull request text may be: kcp's are short.
const maxPRLines = 50

var (
	markdownLink     = regexp.MustCompile(`\]\(([^)]*)\)`)
	releaseNoteBlock = regexp.MustCompile("(?s)```release-note\n(.*?)\n```")
	// kcp's pull request template: its sections, in order.
	kcpTemplate = regexp.MustCompile(`(?s)^## Summary\n.*\n## What Type of PR Is This\?\n.*\n## Related Issue\(s\)\n.*\n## Release Notes\n\n` + "```release-note\n")
	// The kinds a kcp pull request of ours may have, of those kcp's template
	// lists (kind/chore: maintenance such as a CI job).
	kcpKind = regexp.MustCompile(`\n/kind (bug|chore|cleanup|feature)\n`)
)

// reviewChecklist checks what the export wrote to out against what a kcp
// maintainer's review asked of it, so that the next export cannot slide
// back: no file for upstream names this repository or its reports; the
// fork's text and the pin bump's stand alone in kcp's template, short, with
// no relative link; the fork's refers to kcp-dev/kcp#4551 with the release
// note NONE, kcp's fixes #4551 with a note that names kcp and kubectl only;
// and with verified false (--no-verify) no text quotes a test run.
func reviewChecklist(t *testing.T, out string, res *Result, verified bool) {
	t.Helper()
	err := filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, path)
		if d.Name() == "EVIDENCE.md" {
			t.Errorf("%s: the export writes no evidence file for upstream", rel)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, bad := range notForUpstream {
			if strings.Contains(string(data), bad) {
				t.Errorf("%s contains %q", rel, bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	fork := readOut(t, out, PRFile)
	checkPRText(t, PRFile, fork, verified)
	if !strings.Contains(fork, "\nRefs kcp-dev/kcp#4551\n") || strings.Contains(fork, "Fixes") {
		t.Errorf("%s: want Refs kcp-dev/kcp#4551 and no Fixes: merging into the fork fixes nothing in kcp until the pin moves", PRFile)
	}
	if note := releaseNote(t, PRFile, fork); note != "NONE" {
		t.Errorf("%s: release note %q, want NONE: the fork publishes none", PRFile, note)
	}
	// GitHub cuts a title at 80 characters: the fork's pull request takes
	// the fix's subject.
	if len(res.Title) >= 80 || res.Title != res.Patches[len(res.Patches)-1].Subject {
		t.Errorf("the fork's pull request is titled %q: want the fix's subject, under 80 characters", res.Title)
	}
	for _, p := range res.Patches {
		if len(p.Subject) >= 80 {
			t.Errorf("%s: subject of %d characters, want under 80: %q", p.File, len(p.Subject), p.Subject)
		}
	}
	if issue := readOut(t, out, IssueFile); !strings.HasPrefix(issue, "Title: ") || strings.Contains(issue, "<!--") {
		t.Errorf("%s: want a title first and no HTML comment:\n%s", IssueFile, issue)
	}

	var bump *KCPPRResult
	for i, pr := range res.KCPPRs {
		if strings.HasSuffix(pr.Name, "-pin-bump") {
			bump = &res.KCPPRs[i]
		}
	}
	if bump == nil {
		t.Fatalf("no pin-bump pull request among %+v", res.KCPPRs)
	}
	if bump.Generic {
		t.Errorf("%s: the pin bump's text is the generic one", bump.PR)
	}
	kcp := readOut(t, out, bump.PR)
	checkPRText(t, bump.PR, kcp, verified)
	if !strings.Contains(kcp, "\nFixes #4551\n") || strings.Contains(kcp, "kcp-dev/kcp#") {
		t.Errorf("%s: want Fixes #4551, and #4551 rather than kcp-dev/kcp#4551 inside kcp", bump.PR)
	}
	note := releaseNote(t, bump.PR, kcp)
	if !strings.Contains(note, `"kubectl annotate <resource> <name> kcp.io/original-api-version-"`) {
		t.Errorf("%s: the release note does not give the kubectl remedy:\n%s", bump.PR, note)
	}
	// Every command it quotes is kubectl's, and it names no other tool.
	for _, q := range regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(note, -1) {
		if strings.Contains(q[1], " ") && !strings.HasPrefix(q[1], "kubectl ") && !strings.HasPrefix(q[1], "concurrent map") {
			t.Errorf("%s: the release note quotes %q, which is not kubectl", bump.PR, q[1])
		}
	}
	if strings.Contains(strings.ToLower(note), "carry") {
		t.Errorf("%s: the release note names a tool kcp does not ship:\n%s", bump.PR, note)
	}
	if !regexp.MustCompile(`\n\s*BRANCH=(` + regexp.QuoteMeta(ForkVersionPlaceholder) + `|v0\.0\.0-[0-9]{14}-[0-9a-f]{12}) \./` + regexp.QuoteMeta(KCPBumpScript) + `\n`).MatchString(kcp) {
		t.Errorf("%s does not show the pin bump's command, kcp's own script", bump.PR)
	}
	if ref := fmt.Sprintf("kcp-dev/kubernetes#%d", res.ForkPR); res.ForkPR > 0 && !strings.Contains(kcp, ref) {
		t.Errorf("%s does not link the fork's pull request %s", bump.PR, ref)
	} else if res.ForkPR == 0 && !strings.Contains(kcp, "That pull request comes first") {
		t.Errorf("%s: without the fork's pull request number, it must say that pull request comes first", bump.PR)
	}
	// Every other kcp pull request: its own text in kcp's template, a kind,
	// a release note or NONE, and no note naming a tool kcp does not ship.
	for _, pr := range res.KCPPRs {
		text := readOut(t, out, pr.PR)
		if pr.Generic {
			if !strings.HasPrefix(text, "<!-- Written from the commit messages") {
				t.Errorf("%s: a generic text must say so first:\n%s", pr.PR, text)
			}
			if inRepository(t, pr.Name) {
				t.Errorf("%s: kcp-patches/%s has no pull request text (kcp-pr-<name>.md.tmpl)", pr.PR, pr.Name)
			}
			continue
		}
		checkPRText(t, pr.PR, text, verified)
		if !kcpKind.MatchString(text) {
			t.Errorf("%s: want /kind bug, chore, cleanup or feature", pr.PR)
		}
		note := releaseNote(t, pr.PR, text)
		if note == "" || strings.Contains(strings.ToLower(note), "carry") {
			t.Errorf("%s: release note %q: want NONE or a note about kcp", pr.PR, note)
		}
	}
}

// inRepository says whether name is one of the repository's own
// kcp-patches/ pull requests (the synthetic tests' are not).
func inRepository(t *testing.T, name string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(testfs.RepoRoot(t), "kcp-patches", name))
	return err == nil
}

func readOut(t *testing.T, out, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// checkPRText checks what both texts share: kcp's template, no header
// comment, short, links only to absolute addresses, and a test run quoted
// only when the export ran or read one.
func checkPRText(t *testing.T, name, text string, verified bool) {
	t.Helper()
	if !kcpTemplate.MatchString(text) {
		t.Errorf("%s does not follow kcp's template (Summary, What Type of PR Is This?, Related Issue(s), Release Notes):\n%s", name, text)
	}
	if !strings.Contains(text, "\n/kind ") {
		t.Errorf("%s has no /kind", name)
	}
	if strings.Contains(text, "<!--") {
		t.Errorf("%s has an HTML comment; a pull request text has no header", name)
	}
	if n := strings.Count(text, "\n"); n > maxPRLines {
		t.Errorf("%s has %d lines, want at most %d", name, n, maxPRLines)
	}
	for _, m := range markdownLink.FindAllStringSubmatch(text, -1) {
		if !strings.HasPrefix(m[1], "https://") {
			t.Errorf("%s links %q: a pull request text has no relative links", name, m[1])
		}
	}
	if !verified {
		for _, claim := range []string{"Without the fix, for this pull request", "\nFAIL ", "verified"} {
			if strings.Contains(text, claim) {
				t.Errorf("%s quotes a test run (%q) that this export did not run", name, claim)
			}
		}
	}
}

func releaseNote(t *testing.T, name, text string) string {
	t.Helper()
	m := releaseNoteBlock.FindStringSubmatch(text)
	if m == nil {
		t.Errorf("%s has no release-note block", name)
		return ""
	}
	return m[1]
}
