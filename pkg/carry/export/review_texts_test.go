package export

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The sixth review, on the set of texts: the fork's pull requests in the
// fork's own template, no paragraph or long sentence in two texts, and no
// claim about a release whose source was not read.

// The fork's pull request template: kcp-dev/kubernetes's
// .github/PULL_REQUEST_TEMPLATE.md, at the commit kcp pins (e006560fc76a, in
// the module cache at github.com/kcp-dev/kubernetes@v1.37.0-alpha.0.0.20260602065202-e006560fc76a),
// is Kubernetes' own, with the same headings as v1.37.2's: "What type of PR
// is this?", "What this PR does / why we need it:", "Which issue(s) this PR
// is related to:", "Special notes for your reviewer:", "Does this PR
// introduce a user-facing change?" with a release-note block, "Additional
// documentation e.g., KEPs ...:" with a docs block. A Kubernetes fork takes
// Kubernetes' template, not kcp's, so kubernetesTemplate is the fork's too.
var forkTemplate = kubernetesTemplate

// forkTextProblems is what a text for the fork must be: in the fork's
// template (forkTemplate) with a /kind, standing alone (standAloneProblems),
// and quoting a test run only when the export ran or read one (verified).
func forkTextProblems(text string, verified bool) []string {
	var problems []string
	if !forkTemplate.MatchString(text) {
		problems = append(problems, "does not follow the fork's template, Kubernetes' (What type of PR is this? /kind, What this PR does / why we need it:, Which issue(s) this PR is related to:, Special notes for your reviewer:, Does this PR introduce a user-facing change? with a release-note block, Additional documentation ... with a docs block)")
	}
	problems = append(problems, standAloneProblems(text)...)
	if !verified {
		for _, claim := range []string{"Without the fix, for this pull request", "\nFAIL ", "verified"} {
			if strings.Contains(text, claim) {
				problems = append(problems, fmt.Sprintf("quotes a test run (%q) that this export did not run", claim))
			}
		}
	}
	return problems
}

// checkForkText reports forkTextProblems of the fork's text name.
func checkForkText(t *testing.T, name, text string, verified bool) {
	t.Helper()
	for _, p := range forkTextProblems(text, verified) {
		t.Errorf("%s: %s", name, p)
	}
}

const (
	// minSharedParagraphWords is how long a paragraph or list item must be
	// for two texts to be refused for sharing it: shorter ones are the
	// templates' own lines ("Refs kcp-dev/kcp#4551", "NONE").
	minSharedParagraphWords = 8
	// minSharedSentenceWords is how long a sentence must be for two texts
	// to be refused for sharing it.
	minSharedSentenceWords = 14
)

var sentenceEnd = regexp.MustCompile(`[.!?]\s+`)

// normalizeProse is a block of prose as sharedProseProblems compares it:
// without code spans' backticks and markdown emphasis, lower case, single
// spaces.
func normalizeProse(s string) string {
	s = strings.NewReplacer("`", "", "**", "", "*", "").Replace(s)
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// sharedProseProblems names every paragraph or list item of prose (of at
// least minSharedParagraphWords words) and every sentence (of at least
// minSharedSentenceWords words) that two of texts, by name, have in
// common: a reader of both reads it twice, and one text should point to
// the other instead. Code blocks, headings and tables are not prose.
func sharedProseProblems(texts map[string]string) []string {
	type where struct{ kind, names string }
	paragraphs := map[string][]string{} // normalized prose -> text names
	sentences := map[string][]string{}
	names := make([]string, 0, len(texts))
	for name := range texts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		seenP, seenS := map[string]bool{}, map[string]bool{}
		for _, b := range mdBlocks(texts[name]) {
			if b.kind != "paragraph" && b.kind != "item" {
				continue
			}
			p := normalizeProse(strings.Join(b.lines, " "))
			if len(strings.Fields(p)) >= minSharedParagraphWords && !seenP[p] {
				seenP[p] = true
				paragraphs[p] = append(paragraphs[p], name)
			}
			for _, s := range sentenceEnd.Split(p, -1) {
				s = strings.TrimRight(s, ".!?")
				if len(strings.Fields(s)) >= minSharedSentenceWords && !seenS[s] {
					seenS[s] = true
					sentences[s] = append(sentences[s], name)
				}
			}
		}
	}
	var problems []string
	report := func(kind string, m map[string][]string) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if in := m[k]; len(in) > 1 {
				shown := k
				if len(shown) > 100 {
					shown = shown[:100] + "..."
				}
				problems = append(problems, fmt.Sprintf("%s and %s share a %s: %q", strings.Join(in[:len(in)-1], ", "), in[len(in)-1], kind, shown))
			}
		}
	}
	report("paragraph", paragraphs)
	report("sentence", sentences)
	return problems
}

// unreadReleases are release lines a text may not speak for as a whole: no
// source of them was read here (kcp v0.32.3 and main's go.mod were), so a
// text says what it read, or cites who said it ("kcp-dev/kcp#4551 reports
// that kcp v0.33.1 pins it").
var unreadReleases = regexp.MustCompile(`\bv?0\.33\.x\b`)

// unreadClaimProblems names each claim of a text about a release line no
// source of which was read.
func unreadClaimProblems(text string) []string {
	var problems []string
	for _, m := range unreadReleases.FindAllString(text, -1) {
		problems = append(problems, fmt.Sprintf("speaks for %s, which was not read: say what was read (kcp v0.32.3, main) and cite kcp-dev/kcp#4551 for v0.33.1", m))
	}
	return problems
}

// checkTextSet runs the set's checks on every markdown text the export
// wrote to out.
func checkTextSet(t *testing.T, out string) {
	t.Helper()
	texts := map[string]string{}
	err := filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".md" {
			return err
		}
		rel, _ := filepath.Rel(out, path)
		texts[filepath.ToSlash(rel)] = readOut(t, out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range sharedProseProblems(texts) {
		t.Error(p)
	}
	names := make([]string, 0, len(texts))
	for name := range texts {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, p := range unreadClaimProblems(texts[name]) {
			t.Errorf("%s: %s", name, p)
		}
	}
}

// Each check of the set refuses what it is for and passes its fix.
func TestTextSetChecks(t *testing.T) {
	fork := "#### What type of PR is this?\n\n/kind bug\n\n#### What this PR does / why we need it:\n\nA fix.\n\n" +
		"#### Which issue(s) this PR is related to:\n\nRefs kcp-dev/kcp#4551\n\n#### Special notes for your reviewer:\n\nSquash it.\n\n" +
		"#### Does this PR introduce a user-facing change?\n\n```release-note\nNONE\n```\n\n" +
		"#### Additional documentation e.g., KEPs (Kubernetes Enhancement Proposals), usage docs, etc.:\n\n```docs\n\n```\n"
	if p := forkTextProblems(fork, false); len(p) > 0 {
		t.Errorf("a fork text in the fork's template: %q", p)
	}
	kcpHeadings := "## Summary\n\nA fix.\n\n## What Type of PR Is This?\n\n/kind bug\n\n## Related Issue(s)\n\nRefs kcp-dev/kcp#4551\n\n## Release Notes\n\n```release-note\nNONE\n```\n"
	complains(t, "a fork text in kcp's template", forkTextProblems(kcpHeadings, false), "does not follow the fork's template")
	complains(t, "a fork text quoting a run it did not make", forkTextProblems(strings.Replace(fork, "Squash it.", "Squash it. Without the fix, for this pull request:", 1), false), "quotes a test run")

	shared := "The watch cache encodes an event once per encoder and hands those bytes to every watcher of the cache."
	a := "## Summary\n\n" + shared + "\n\nA text of its own, about one thing.\n"
	b := "## Summary\n\nAnother text.\n\n- " + shared + "\n"
	complains(t, "two texts with one paragraph", sharedProseProblems(map[string]string{"a/PR.md": a, "b/PR.md": b}), "a/PR.md and b/PR.md share a paragraph", "a/PR.md and b/PR.md share a sentence")
	long := "kcp serves wildcard partial-metadata requests from a storage of their own, apart from the CRD's storage and its watch cache."
	c := "## Summary\n\nFirst this. " + long + " Then that.\n"
	d := "## Summary\n\n" + long + "\n"
	complains(t, "two texts with one long sentence", sharedProseProblems(map[string]string{"c.md": c, "d.md": d}), "c.md and d.md share a sentence")
	if p := sharedProseProblems(map[string]string{"a/PR.md": a, "c.md": c, "e.md": "## Summary\n\nNONE\n\nRefs kcp-dev/kcp#4551\n", "f.md": "## Summary\n\nNONE\n\nRefs kcp-dev/kcp#4551\n"}); len(p) > 0 {
		t.Errorf("texts that share only short template lines: %q", p)
	}
	// Code is not prose: the same command in two texts is fine.
	cmd := "```sh\ngo test -race -run TestRESTMapperConcurrentWithUpdateInformers ./pkg/informer/ ./pkg/informer/ ./pkg/informer/\n```\n"
	if p := sharedProseProblems(map[string]string{"g.md": cmd, "h.md": cmd}); len(p) > 0 {
		t.Errorf("texts that share a code block: %q", p)
	}

	complains(t, "a claim for a release line not read", unreadClaimProblems("kcp v0.32.x, v0.33.x and main pin it."), "speaks for v0.33.x")
	if p := unreadClaimProblems("kcp v0.32.3 and main pin it; kcp-dev/kcp#4551 reports that kcp v0.33.1 pins it too."); len(p) > 0 {
		t.Errorf("what was read, and a citation: %q", p)
	}
}
