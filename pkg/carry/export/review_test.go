package export

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
)

// notForUpstream are strings no file the export writes may contain: this
// repository's name, its commands and files, and the words of its reports,
// which a kcp maintainer can neither follow nor reproduce.
var notForUpstream = []string{"kcp-carry", "carry scrub", "EVIDENCE.md", "pkg: github.com/", "Duel"}

// maxPRLines is how long a pull request text may be: kcp's are short.
const maxPRLines = 50

// maxSubject is how long a subject may be, the fork's and kcp's: a pull
// request takes its title from it, and GitHub cuts titles at 80.
const maxSubject = 79

// pinningTest is kcp's test (kcp-patches/5-partial-metadata-watch-caches)
// that pins a custom resource's wildcard and single-cluster
// partial-metadata watches to different watch caches.
const pinningTest = "TestPartialMetadataWatchWildcardAndSingleClusterApart"

var (
	markdownLink     = regexp.MustCompile(`\]\(([^)]*)\)`)
	releaseNoteBlock = regexp.MustCompile("(?s)```release-note\n(.*?)\n```")
	// kcp's pull request template: its sections, in order.
	kcpTemplate = regexp.MustCompile(`(?s)^## Summary\n.*\n## What Type of PR Is This\?\n.*\n## Related Issue\(s\)\n.*\n## Release Notes\n\n` + "```release-note\n")
	// The kinds a kcp pull request of ours may have, of those kcp's template
	// lists (kind/chore: maintenance such as a CI job).
	kcpKind = regexp.MustCompile(`\n/kind (bug|chore|cleanup|feature)\n`)
	// Kubernetes' pull request template (.github/PULL_REQUEST_TEMPLATE.md of
	// kubernetes/kubernetes, as in v1.37.2): its sections, in order, without
	// its comments.
	kubernetesTemplate = regexp.MustCompile("(?s)^#### What type of PR is this\\?\n\n/kind (bug|cleanup|feature|failing-test|flake|documentation|api-change|deprecation|regression)\n\n" +
		"#### What this PR does / why we need it:\n\n.+\n\n" +
		"#### Which issue\\(s\\) this PR is related to:\n\n.+\n\n" +
		"#### Special notes for your reviewer:\n\n.+\n\n" +
		"#### Does this PR introduce a user-facing change\\?\n\n```release-note\n.+\n```\n\n" +
		"#### Additional documentation e\\.g\\., KEPs \\(Kubernetes Enhancement Proposals\\), usage docs, etc\\.:\n\n```docs\n.*```\n$")
)

// reviewChecklist checks what the export wrote to out against what a kcp
// maintainer's review asked of it, so that the next export cannot slide
// back: no file for upstream names this repository or its reports; the
// fork's text and kcp's stand alone in kcp's template, short, with no
// relative link, and subjects fit a title; the fork's refers to
// kcp-dev/kcp#4551 with the release note NONE, and for the watch events it
// leaves as they are names kcp's test that pins them (no issue draft is
// written); kcp's pin bump fixes #4551 with a note that names
// kcp and kubectl only, shows kcp's own script and a check of every go.mod
// and go.sum, links the fork's pull request (or says it comes first) and
// names the backports as /cherry-pick candidates; every kcp text passes
// kcpTextProblems and every kcp patch kcpPatchProblems; and with verified
// false (--no-verify) no text quotes a test run.
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
		if strings.HasPrefix(d.Name(), "ISSUE-") {
			t.Errorf("%s: the export writes no issue draft: kcp's test pins the watch events (kcp-patches/5-partial-metadata-watch-caches)", rel)
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
	checkForkText(t, PRFile, fork, verified)
	checkKCPText(t, PRFile, fork)
	for _, p := range res.Patches {
		checkForkMessage(t, out, p.File, fork)
	}
	if !strings.Contains(fork, "\nRefs kcp-dev/kcp#4551\n") || strings.Contains(fork, "Fixes") {
		t.Errorf("%s: want Refs kcp-dev/kcp#4551 and no Fixes: merging into the fork fixes nothing in kcp until the pin moves", PRFile)
	}
	if note := releaseNote(t, PRFile, fork); note != "NONE" {
		t.Errorf("%s: release note %q, want NONE: the fork publishes none", PRFile, note)
	}
	if strings.Contains(fork, "issue of its own") || strings.Contains(fork, "watch events") && !strings.Contains(fork, pinningTest) {
		t.Errorf("%s: for the watch events it leaves as they are, want kcp's test that pins them, %s, and no issue", PRFile, pinningTest)
	}
	if len(res.Title) > maxSubject || res.Title != res.Patches[len(res.Patches)-1].Subject {
		t.Errorf("the fork's pull request is titled %q: want the fix's subject, at most %d characters", res.Title, maxSubject)
	}
	for _, p := range res.Patches {
		if len(p.Subject) > maxSubject {
			t.Errorf("%s: subject of %d characters, want at most %d: %q", p.File, len(p.Subject), maxSubject, p.Subject)
		}
	}
	// The fork's later pull requests: each in the fork's template, titled by
	// its last subject, and merging after the fix's, which it says.
	for _, pr := range res.ForkPRs {
		text := readOut(t, out, pr.PR)
		checkForkText(t, pr.PR, text, verified)
		checkKCPText(t, pr.PR, text)
		for _, p := range pr.Patches {
			checkForkMessage(t, out, p.File, text)
		}
		if !strings.Contains(text, "\nRefs kcp-dev/kcp#4551\n") || strings.Contains(text, "Fixes") {
			t.Errorf("%s: want Refs kcp-dev/kcp#4551 and no Fixes", pr.PR)
		}
		if note := releaseNote(t, pr.PR, text); note != "NONE" {
			t.Errorf("%s: release note %q, want NONE: the fork publishes none", pr.PR, note)
		}
		if len(pr.Title) > maxSubject || pr.Title != pr.Patches[len(pr.Patches)-1].Subject {
			t.Errorf("the fork's pull request %s is titled %q: want its last subject, at most %d characters", pr.Name, pr.Title, maxSubject)
		}
		for _, p := range pr.Patches {
			if len(p.Subject) > maxSubject {
				t.Errorf("%s: subject of %d characters, want at most %d: %q", p.File, len(p.Subject), maxSubject, p.Subject)
			}
		}
		after := "the pull request of `" + res.Title + "`"
		if res.ForkPR > 0 {
			after = fmt.Sprintf("kcp-dev/kubernetes#%d", res.ForkPR)
		}
		if !strings.Contains(text, "Merge this after "+after) {
			t.Errorf("%s: does not say that it merges after the fix's pull request (%s)", pr.PR, after)
		}
	}
	checkTextSet(t, out)
	comment := readOut(t, out, CommentFile)
	for _, p := range commentProblems(comment) {
		t.Errorf("%s: %s", CommentFile, p)
	}
	checkKCPText(t, CommentFile, comment)

	// The pull request for kubernetes/kubernetes: Kubernetes' template, short,
	// standing alone.
	if res.Upstream != nil {
		for _, p := range kubernetesTextProblems(readOut(t, out, res.Upstream.PR)) {
			t.Errorf("%s: %s", res.Upstream.PR, p)
		}
		for _, p := range res.Upstream.Patches {
			if len(p.Subject) > maxSubject || strings.HasPrefix(p.Subject, "UPSTREAM:") {
				t.Errorf("%s: subject %q: want at most %d characters, and not the fork's UPSTREAM: convention", p.File, p.Subject, maxSubject)
			}
		}
	}

	bump := kcpPR(res, "pin-bump")
	if bump == nil {
		t.Fatalf("no pin-bump pull request among %+v", res.KCPPRs)
	}
	if bump.Generic {
		t.Errorf("%s: the pin bump's text is the generic one", bump.PR)
	}
	kcp := readOut(t, out, bump.PR)
	for _, p := range pinBumpProblems(kcp, res.ForkPR) {
		t.Errorf("%s: %s", bump.PR, p)
	}
	// The pin bump says what the detector's pull request brings kcp's jobs
	// when the fork version it pins holds it, and only then.
	if merged := slices.Contains(res.ForkVersionIncludes, "detector"); merged != strings.Contains(kcp, "KUBE_WATCHCACHE_MUTATION_DETECTOR") {
		t.Errorf("%s: the fork version holds the detector: %v, but the text says what it brings: %v", bump.PR, merged, !merged)
	}
	for _, p := range kcpOrderProblems(t, res, func(rel string) string { return readOut(t, out, rel) }) {
		t.Error(p)
	}
	// Every kcp pull request: its own text in kcp's template, a kind, a
	// release note or NONE, no note naming a tool kcp does not ship, and
	// what kcpTextProblems and kcpPatchProblems look for.
	for _, pr := range res.KCPPRs {
		for _, p := range pr.Patches {
			if len(p.Subject) > maxSubject {
				t.Errorf("%s: subject of %d characters, want at most %d: %q", p.File, len(p.Subject), maxSubject, p.Subject)
			}
			for _, problem := range kcpPatchProblems(readOut(t, out, p.File)) {
				t.Errorf("%s: %s", p.File, problem)
			}
		}
		text := readOut(t, out, pr.PR)
		if pr.Generic {
			if !strings.HasPrefix(text, "<!-- Written from the commit messages") {
				t.Errorf("%s: a generic text must say so first:\n%s", pr.PR, text)
			}
			if theCarry(t, res, pr.Name) {
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
		for _, p := range kcpTextProblems(text) {
			t.Errorf("%s: %s", pr.PR, p)
		}
		checkKCPText(t, pr.PR, text)
		// An appendix stands alone as the pull request's first comment,
		// which the text points to; a text points to one only if it has one.
		if says := strings.Contains(text, "first comment"); says != (pr.Appendix != "") {
			t.Errorf("%s: says the first comment holds detail: %v, but has an appendix: %q", pr.PR, says, pr.Appendix)
		}
		if pr.Appendix != "" {
			appendix := readOut(t, out, pr.Appendix)
			for _, p := range slices.Concat(standAloneProblems(appendix), kcpTextProblems(appendix)) {
				t.Errorf("%s: %s", pr.Appendix, p)
			}
			checkKCPText(t, pr.Appendix, appendix)
		}
	}
}

// checkKCPText is the fifth review on a text for kcp: short as GitHub shows
// it, and every figure beside its command (kcpTextLengthProblems).
func checkKCPText(t *testing.T, name, text string) {
	t.Helper()
	for _, p := range kcpTextLengthProblems(text) {
		t.Errorf("%s: %s", name, p)
	}
}

// checkForkMessage checks the message of the exported fork patch file (a
// path relative to out) against its pull request's text prText
// (forkMessageProblems).
func checkForkMessage(t *testing.T, out, file, prText string) {
	t.Helper()
	data := readOut(t, out, file)
	p, err := series.ParsePatch(file, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range forkMessageProblems(p.Header.Body, prText) {
		t.Errorf("%s: %s", file, problem)
	}
}

// pinBumpProblems is what the review asked of the pin bump's text: it fixes
// #4551, its release note gives the kubectl remedy and names no other tool,
// it bumps with kcp's own script and checks every go.mod and go.sum, it
// links the fork's pull request forkPR (or, with 0, says that the fork's
// pull request comes first), and it names the backports as /cherry-pick
// candidates.
func pinBumpProblems(text string, forkPR int) []string {
	var problems []string
	if !strings.Contains(text, "\nFixes #4551\n") || strings.Contains(text, "kcp-dev/kcp#") {
		problems = append(problems, "want Fixes #4551, and #4551 rather than kcp-dev/kcp#4551 inside kcp")
	}
	note := ""
	if m := releaseNoteBlock.FindStringSubmatch(text); m != nil {
		note = m[1]
	}
	if !strings.Contains(note, `"kubectl annotate <resource> <name> kcp.io/original-api-version-"`) {
		problems = append(problems, "the release note does not give the kubectl remedy:\n"+note)
	}
	// Every command it quotes is kubectl's, and it names no other tool.
	for _, q := range regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(note, -1) {
		if strings.Contains(q[1], " ") && !strings.HasPrefix(q[1], "kubectl ") && !strings.HasPrefix(q[1], "concurrent map") {
			problems = append(problems, fmt.Sprintf("the release note quotes %q, which is not kubectl", q[1]))
		}
	}
	if strings.Contains(strings.ToLower(note), "carry") {
		problems = append(problems, "the release note names a tool kcp does not ship:\n"+note)
	}
	bump := regexp.MustCompile(`(?m)^\s*BRANCH=(` + regexp.QuoteMeta(ForkVersionPlaceholder) + `|v0\.0\.0-[0-9]{14}-[0-9a-f]{12}) \./` + regexp.QuoteMeta(KCPBumpScript) + `\n`)
	if !bump.MatchString(text) {
		problems = append(problems, "does not bump with kcp's own script: want BRANCH=<the fork's pseudo-version> ./"+KCPBumpScript)
	}
	var checked bool
	for _, line := range strings.Split(text, "\n") {
		if !strings.Contains(line, "grep -c ") || !strings.Contains(line, "# 0 in each") {
			continue
		}
		checked = true
		for _, m := range KCPModules {
			for _, f := range []string{"go.mod", "go.sum"} {
				if name := path.Join(m, f); !slices.Contains(strings.Fields(line), name) {
					problems = append(problems, fmt.Sprintf("the pin check does not grep %s: %s", name, strings.TrimSpace(line)))
				}
			}
		}
	}
	if !checked {
		problems = append(problems, "no pin check (grep -c <old commit> ... # 0 in each)")
	}
	if forkPR > 0 {
		if ref := fmt.Sprintf("kcp-dev/kubernetes#%d", forkPR); !strings.Contains(text, ref) {
			problems = append(problems, "does not link the fork's pull request "+ref)
		}
	} else if !strings.Contains(text, "That pull request comes first") {
		problems = append(problems, "without the fork's pull request number, it must say that pull request comes first")
	}
	for _, branch := range []string{"release-0.32", "release-0.33"} {
		if !strings.Contains(text, "`/cherry-pick "+branch+"`") {
			problems = append(problems, "does not name /cherry-pick "+branch+" as a candidate")
		}
	}
	return problems
}

// kcpHackScripts are the scripts kcp keeps in hack/ (kcp main of 2026-08-07,
// dac74f5955f1: `ls hack/*.sh`): the only scripts a kcp text may name, as
// hack/<name> or ./hack/<name>.
var kcpHackScripts = []string{
	"build-image-docker.sh", "build-image.sh", "bump-k8s.sh", "download-e2e-logs.sh", "etcd-list-poisoned-keys.sh",
	"gen-patch-defaultrestmapper.sh", "run-with-prometheus.sh", "run-with-prow.sh", "uget.sh",
	"update-codegen-clients.sh", "update-codegen-crds.sh", "update-go-modules.sh", "validate-k8s.sh",
	"verify-apiresourceschemas.sh", "verify-codegen-clients.sh", "verify-contextual-logging.sh",
	"verify-go-modules.sh", "verify-go-versions.sh", "verify-imports.sh",
}

var (
	shellScript = regexp.MustCompile(`[\w./-]*\.sh\b`)
	kcpScript   = regexp.MustCompile(`^(\./)?hack/([\w.-]+\.sh)$`)
	// makeCommand finds make in a command line: at its start, or after a
	// space, ;, &, | or (.
	makeCommand = regexp.MustCompile(`(?:^|[\s;&|(])make\s`)
	// goraceCredit is what a sentence claims when it credits GORACE's
	// halt_on_error=0, its default, with keeping a process running.
	// commitRev is a commit as a pin check greps for it.
	commitRev    = regexp.MustCompile(`^[0-9a-f]{12}$`)
	goraceCredit = regexp.MustCompile(`(?i)\b(keeps?|kept|never stops?|stays? up|so that|does not stop|doesn't stop|survives?)\b`)
)

// kcpTextProblems is what every kcp text must not do: name a script kcp
// does not have in its hack/ (bump-fork-pin.sh was ours); check a pin in
// go.mod without its go.sum; pass make a literal $ that make would expand
// (makeDollarProblems); credit GORACE's default halt_on_error=0 with
// keeping kcp up.
func kcpTextProblems(text string) []string {
	var problems []string
	for _, s := range shellScript.FindAllString(text, -1) {
		if m := kcpScript.FindStringSubmatch(s); m == nil || !slices.Contains(kcpHackScripts, m[2]) {
			problems = append(problems, fmt.Sprintf("names the script %s, which kcp does not have in hack/: a kcp text names kcp's own scripts only", s))
		}
	}
	for _, c := range commands(text) {
		fields := strings.Fields(c)
		if !slices.Contains(fields, "grep") || !slices.ContainsFunc(fields, commitRev.MatchString) {
			continue // not a check that a commit is gone
		}
		for _, f := range fields {
			if strings.HasSuffix(f, "go.mod") && !slices.Contains(fields, strings.TrimSuffix(f, "go.mod")+"go.sum") {
				problems = append(problems, fmt.Sprintf("checks the pin in %s but not in its go.sum, which go mod tidy rewrites too: %s", f, strings.TrimSpace(c)))
			}
		}
	}
	problems = append(problems, makeDollarProblems(text)...)
	for _, sentence := range regexp.MustCompile(`\.\s|\n`).Split(text, -1) {
		if strings.Contains(sentence, "halt_on_error") && goraceCredit.MatchString(sentence) {
			problems = append(problems, fmt.Sprintf("credits halt_on_error=0, GORACE's default, with keeping a process up (log_path sends the reports to files; the target decides by them): %q", strings.TrimSpace(sentence)))
		}
	}
	return problems
}

// makeDollarProblems finds the commands a text passes to make (lines of its
// code blocks, its code spans) in which a $ reaches make as it is: make
// expands it, so a literal $ must be written $$. A $ that the shell expands
// first ("${sel[@]}", $(pwd) outside single quotes) is the shell's.
func makeDollarProblems(text string) []string {
	var problems []string
	for _, c := range commands(text) {
		loc := makeCommand.FindStringIndex(c)
		if loc == nil {
			continue
		}
		if literalDollar(c[loc[0]:]) {
			problems = append(problems, fmt.Sprintf("passes make a literal $, which make expands: write $$ (%s)", strings.TrimSpace(c)))
		}
	}
	return problems
}

// commands are what a markdown text gives to run: the lines of its code
// blocks and its code spans.
func commands(text string) []string {
	var cmds []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			cmds = append(cmds, line)
			continue
		}
		spans := strings.Split(line, "`")
		for i := 1; i < len(spans); i += 2 {
			cmds = append(cmds, spans[i])
		}
	}
	return cmds
}

// literalDollar says whether the shell command line cmd hands its command a
// single $ as it is: in single quotes, or before anything the shell does
// not expand. A comment ends the line.
func literalDollar(cmd string) bool {
	var quote byte
	for i := 0; i < len(cmd); i++ {
		switch c := cmd[i]; {
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		case c == quote:
			quote = 0
		case quote == 0 && c == '#' && (i == 0 || cmd[i-1] == ' '):
			return false
		case c == '$' && i+1 < len(cmd) && cmd[i+1] == '$':
			i++
		case c == '$' && quote == '\'':
			return true
		case c == '$':
			if i+1 == len(cmd) || !strings.ContainsRune("({_@*#?!-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", rune(cmd[i+1])) {
				return true
			}
		}
	}
	return false
}

// kcpPatchProblems is what a kcp patch must not add: the string
// "kcp.io/original-api-version" in Go, where kcp has the fork's constant
// (handlers.KCPOriginalAPIVersionAnnotation, k8s.io/apiserver/pkg/endpoints/handlers),
// findstring testing for a flag in a Makefile, which matches any flag
// that contains it (-race in -racey): $(filter ...) matches words; and a
// Prow job (.prow.yaml) that starts on its own: a job ours adds is
// optional and started by /test only (always_run: false, no
// run_if_changed), until the maintainers see it green and decide more.
func kcpPatchProblems(patch string) []string {
	var problems []string
	file := ""
	var jobs []string // the jobs .prow.yaml gains, their added lines each
	for _, line := range strings.Split(patch, "\n") {
		if rest, ok := strings.CutPrefix(line, "diff --git a/"); ok {
			if _, b, ok := strings.Cut(rest, " b/"); ok {
				file = b
			}
			continue
		}
		if !strings.HasPrefix(line, "+") || strings.HasPrefix(line, "+++ ") {
			continue
		}
		if path.Base(file) == ".prow.yaml" {
			if strings.HasPrefix(strings.TrimSpace(line[1:]), "- name: ") && strings.HasPrefix(line[1:], "  - ") {
				jobs = append(jobs, "")
			}
			if len(jobs) > 0 {
				jobs[len(jobs)-1] += strings.TrimSpace(line[1:]) + "\n"
			}
		}
		switch base := path.Base(file); {
		case strings.HasSuffix(file, ".go") && strings.Contains(line, `"kcp.io/original-api-version"`):
			problems = append(problems, fmt.Sprintf(`%s adds the string "kcp.io/original-api-version": use handlers.KCPOriginalAPIVersionAnnotation (k8s.io/apiserver/pkg/endpoints/handlers), as kcp does: %s`, file, strings.TrimSpace(line[1:])))
		case (base == "Makefile" || strings.HasSuffix(base, ".mk")) && strings.Contains(line, "$(findstring "):
			problems = append(problems, fmt.Sprintf("%s tests for a flag with findstring, which matches any word containing it: use $(filter ...): %s", file, strings.TrimSpace(line[1:])))
		}
	}
	for _, job := range jobs {
		name, _, _ := strings.Cut(strings.TrimPrefix(job, "- name: "), "\n")
		lines := strings.Split(job, "\n")
		if !slices.Contains(lines, "optional: true") || !slices.Contains(lines, "always_run: false") || strings.Contains(job, "run_if_changed:") {
			problems = append(problems, fmt.Sprintf(".prow.yaml adds %s, which starts on its own: a new job is optional: true and always_run: false, with no run_if_changed (started by /test %s)", name, name))
		}
	}
	return problems
}

// kubernetesTextProblems is what the pull request for kubernetes/kubernetes
// must be: in Kubernetes' template (kubernetesTemplate), short, with no
// comment, no relative link and nothing of the fork's conventions, and
// honest about the pull request it takes up, #118040, which it names.
func kubernetesTextProblems(text string) []string {
	var problems []string
	if !kubernetesTemplate.MatchString(text) {
		problems = append(problems, "does not follow Kubernetes' template (What type of PR is this? /kind, What this PR does / why we need it:, Which issue(s) this PR is related to:, Special notes for your reviewer:, Does this PR introduce a user-facing change? with a release-note block, Additional documentation ... with a docs block)")
	}
	problems = append(problems, standAloneProblems(text)...)
	for _, fork := range []string{"UPSTREAM:", "<carry>", "kcp-dev/kubernetes"} {
		if strings.Contains(text, fork) {
			problems = append(problems, fmt.Sprintf("names %q, the fork's: Kubernetes' text stands on its own", fork))
		}
	}
	if !strings.Contains(text, "#118040") {
		problems = append(problems, "does not refer to #118040, the watch cache mutation detector proposed in 2023 and closed unmerged")
	}
	return problems
}

// commentProblems is what the comment for kcp-dev/kcp#4551 must be: it
// stands alone (standAloneProblems, kcpTextProblems), names nothing of this
// repository (ourName, no make), runs kcp and kubectl and the
// shell's tools only (commentPrograms), gives the flag for kcp and for kcp's
// Helm chart, the check on the reader's kcp, that typed objects' partial
// items still carry "" in the response only, and how to find what is
// stored; and every figure it quotes comes with the command that measures
// it on the reader's kcp.
func commentProblems(text string) []string {
	problems := append(standAloneProblems(text), kcpTextProblems(text)...)
	for _, m := range ourName.FindAllStringIndex(text, -1) {
		problems = append(problems, fmt.Sprintf("names %q: the comment names nothing of this repository", text[max(0, m[0]-12):min(len(text), m[1]+12)]))
	}
	for _, c := range commands(text) {
		if makeCommand.MatchString(c) {
			problems = append(problems, "runs make, whose targets are ours: "+strings.TrimSpace(c))
		}
	}
	for _, line := range shLines(text) {
		for _, p := range shellPrograms(line) {
			if !slices.Contains(commentPrograms, p) {
				problems = append(problems, fmt.Sprintf("runs %s: a reader's kcp has kcp, kubectl and the shell's tools (%s): %s", p, strings.Join(commentPrograms, " "), strings.TrimSpace(line)))
			}
		}
	}
	for _, want := range []struct{ text, what string }{
		{"`kcp start --watch-cache=false", "the flag for the kcp binary"},
		{"extraFlags: [\"--watch-cache=false\"]", "the flag in kcp's Helm chart's values (kcp.extraFlags)"},
		{"-H \"Accept: $ACCEPT\" 'http://127.0.0.1:8001/clusters/*/apis/rbac.authorization.k8s.io/v1/clusterroles'", "the check: a wildcard partial-metadata LIST of ClusterRoles"},
		{"ACCEPT='application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1'", "the partial-metadata Accept header"},
		{"has(\"kcp.io/original-api-version\"))] | length'", "the check: no full object carries the key"},
		{"still carries `\"\"` in a wildcard partial-metadata response", "that typed objects' partial items still carry \"\" in the response"},
		{"never cached or stored", "that the response's \"\" is never stored"},
		{"the flag does not remove what kcp with the watch cache stored", "that the flag leaves what is stored"},
		{`select(.metadata.annotations["kcp.io/original-api-version"] == "")`, "the command that finds what is stored"},
		{"`kubectl annotate <resource> <name> kcp.io/original-api-version-`", "the kubectl remedy"},
		{"Drop the flag once your kcp has the fix", "when to drop the flag"},
	} {
		if !strings.Contains(text, want.text) {
			problems = append(problems, fmt.Sprintf("does not give %s (%s)", want.what, want.text))
		}
	}
	// Every figure with the command that measures it: the load behind the
	// survival, a command per column of the cost table.
	labels := map[string][]string{
		"Measured on":              {"# the load"},
		"| objects | wildcard par": {"# wildcard partial LIST", "# single-cluster LIST", "# GET", "# watch event delay", "# kcp CPU", "# kcp peak RSS"},
	}
	for figures, cmds := range labels {
		if !strings.Contains(text, figures) || figures == "Measured on" && !strings.Contains(text, "with the flag, ") {
			continue
		}
		for _, label := range cmds {
			if !slices.ContainsFunc(shLines(text), func(l string) bool { return strings.HasSuffix(l, "   "+label) }) {
				problems = append(problems, fmt.Sprintf("quotes figures (%s...) without the command that measures them on the reader's kcp (%s)", figures, label))
			}
		}
	}
	return problems
}

// ourName is this repository's name and its kcp's, in any word: "carry"
// anywhere ("bin/carry", "kcp-carry") and "carried" ("the carried kcp"); an
// object that carries a key is English.
var ourName = regexp.MustCompile(`(?i)carry|\bcarried\b`)

// commentPrograms are the programs the comment's commands may run: kcp,
// kubectl, and what any shell that runs them has.
var commentPrograms = []string{"kcp", "kubectl", "curl", "jq", "grep", "awk", "sort", "seq", "sleep", "kill", "jobs", "wait", "pgrep", "head", "tail", "wc", "date", "echo", "printf", "cat", "xargs", "tee", "true", ":"}

// shLines are the lines of a text's sh code blocks.
func shLines(text string) []string {
	var lines []string
	in, fenced := false, false
	for _, line := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") {
			fenced = !fenced
			in = fenced && t == "```sh"
			continue
		}
		if in {
			lines = append(lines, line)
		}
	}
	return lines
}

// shellPrograms are the programs a shell command line runs: the first word
// of each command outside quotes (after ;, &, &&, |, ||, (, $( and the
// keywords do, then, else, while, if, until), past variable assignments; a
// for's words, done and fi, and what a redirection names are none; a
// comment ends the line.
func shellPrograms(line string) []string {
	var progs []string
	var word strings.Builder
	var quote byte
	first, loop := true, false
	flush := func() {
		w := word.String()
		word.Reset()
		switch {
		case w == "" || !first:
		case slices.Contains([]string{"do", "then", "else", "while", "if", "until", "!"}, w):
		case w == "for":
			first, loop = false, true
		case w == "done" || w == "fi":
			first = false
		case regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`).MatchString(w):
		default:
			progs = append(progs, w)
			first = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
			word.WriteByte(c)
		case c == '\'' || c == '"':
			quote = c
			word.WriteByte(c)
		case c == '#' && (i == 0 || line[i-1] == ' '):
			i = len(line)
		case c == ' ' || c == '\t':
			flush()
		case c == '>' || c == '<':
			flush()
			first = false
			for i+1 < len(line) && strings.ContainsRune(">&0123456789", rune(line[i+1])) {
				i++
			}
		case c == ';' || c == '|' || c == '&' || c == '(':
			if loop && c == ';' {
				loop = false
			}
			flush()
			first = !loop || c == '('
		case c == ')':
			flush()
			first = false
		default:
			word.WriteByte(c)
		}
	}
	flush()
	return progs
}

// standAloneProblems is what a text for another repository must not have:
// an HTML comment, more than maxPRLines lines, a relative link.
func standAloneProblems(text string) []string {
	var problems []string
	if strings.Contains(text, "<!--") {
		problems = append(problems, "has an HTML comment")
	}
	if n := strings.Count(text, "\n"); n > maxPRLines {
		problems = append(problems, fmt.Sprintf("has %d lines, want at most %d", n, maxPRLines))
	}
	for _, m := range markdownLink.FindAllStringSubmatch(text, -1) {
		if !strings.HasPrefix(m[1], "https://") {
			problems = append(problems, fmt.Sprintf("links %q: no relative links", m[1]))
		}
	}
	return problems
}

// theCarry says whether res exports this repository's carry and name is
// one of its kcp-patches/ pull requests (the synthetic tests' are not).
func theCarry(t *testing.T, res *Result, name string) bool {
	t.Helper()
	if res.Repo != "github.com/kcp-dev/kubernetes" {
		return false
	}
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
	for _, p := range standAloneProblems(text) {
		t.Errorf("%s: %s", name, p)
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
