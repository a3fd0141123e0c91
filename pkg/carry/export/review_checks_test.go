package export

import (
	"archive/zip"
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/modcache"
	"github.com/kcp-carry/kcp-carry/pkg/util/reporoot"
)

// complains fails the test unless problems has one that contains each of
// wants, and no more than len(wants).
func complains(t *testing.T, what string, problems []string, wants ...string) {
	t.Helper()
	all := strings.Join(problems, "\n")
	for _, w := range wants {
		if !strings.Contains(all, w) {
			t.Errorf("%s: no complaint containing %q; got:\n%s", what, w, all)
		}
	}
	if len(problems) > len(wants) {
		t.Errorf("%s: %d complaints, want %d:\n%s", what, len(problems), len(wants), all)
	}
}

// Each check of kcpTextProblems complains about a text that does what the
// review refused, and lets the corrected text pass.
func TestKCPTextChecks(t *testing.T) {
	for _, c := range []struct {
		name, text string
		wants      []string
	}{
		{
			"our own script",
			"```sh\n/tmp/pr/kcp-dev-kcp/bump-fork-pin.sh . v0.0.0-<date>-<commit>\n```\nand `hack/kcp-race-target.sh`, `hack/nope.sh`\n",
			[]string{"the script /tmp/pr/kcp-dev-kcp/bump-fork-pin.sh,", "the script hack/kcp-race-target.sh,", "the script hack/nope.sh,"},
		},
		{"kcp's own scripts", "```sh\nBRANCH=v0.0.0-<date>-<commit> ./hack/bump-k8s.sh\n```\nand `hack/run-with-prow.sh`\n", nil},
		{
			"a pin check of go.mod only",
			"```sh\ngrep -c e006560fc76a go.mod docs/generators/cli-doc/go.mod   # 0 in each\n```\n",
			[]string{"checks the pin in go.mod but not", "checks the pin in docs/generators/cli-doc/go.mod but not"},
		},
		{"a pin check of go.mod and go.sum", "```sh\ngrep -c e006560fc76a go.mod go.sum   # 0 in each\n```\n", nil},
		{"a count of go.mod's replaces", "1 of the 34 (`grep -c '=> github.com/kcp-dev/kubernetes' go.mod`)\n", nil},
		{
			"a $ make eats",
			"```sh\nmake test-e2e WHAT=./test/e2e/conformance TEST_ARGS='-run ^TestX$'\n```\n" +
				"or `make test-e2e TEST_ARGS=\"-run ^TestX$\"`, or `cd kcp && make test TEST_ARGS='-run ^$(X)'`\n",
			[]string{"TEST_ARGS='-run ^TestX$'", `TEST_ARGS="-run ^TestX$"`, "^$(X)"},
		},
		{
			"$$, the shell's $ and a $ make never sees",
			"```sh\nmake test-e2e TEST_ARGS='-run ^TestX$$'\nmake test-e2e-shared-minimal-race \"${sel[@]}\" WORK_DIR=$PWD   # a comment's $\n" +
				"go test -run '^TestX$' ./pkg/\n```\nwhen `$(filter -race,$(BUILDFLAGS))` finds it\n",
			nil,
		},
		{
			"GORACE's default credited",
			"run with `GORACE='halt_on_error=0 log_path=...'`, so that a report never stops kcp. halt_on_error=0 keeps kcp up\n",
			[]string{"credits halt_on_error=0", "halt_on_error=0 keeps kcp up"},
		},
		{"GORACE's log_path", "GORACE's `log_path` sends each process's race reports to a file; halt_on_error=0 is GORACE's default.\n", nil},
	} {
		complains(t, c.name, kcpTextProblems(c.text), c.wants...)
	}
}

// kcpPatchProblems complains about the annotation's string added in Go and
// about findstring added in a Makefile, and about nothing else.
func TestKCPPatchChecks(t *testing.T) {
	patch := "Subject: [PATCH] e2e: x\n---\n" +
		"diff --git a/test/e2e/x_test.go b/test/e2e/x_test.go\n--- a/test/e2e/x_test.go\n+++ b/test/e2e/x_test.go\n@@ -1,3 +1,4 @@\n" +
		" \tconst old = \"kcp.io/original-api-version\"\n+\tconst annotation = \"kcp.io/original-api-version\"\n+\tv := obj.GetAnnotations()[handlers.KCPOriginalAPIVersionAnnotation]\n" +
		"diff --git a/docs/x.md b/docs/x.md\n--- a/docs/x.md\n+++ b/docs/x.md\n@@ -1 +1,2 @@\n+The key is \"kcp.io/original-api-version\".\n" +
		"diff --git a/Makefile b/Makefile\n--- a/Makefile\n+++ b/Makefile\n@@ -1,2 +1,4 @@\n" +
		" X = $(findstring a,$(B))\n+BUILD_CGO_ENABLED = $(if $(findstring -race,$(BUILDFLAGS)),1,0)\n+OK = $(if $(filter -race,$(BUILDFLAGS)),1,0)\n"
	complains(t, "patch", kcpPatchProblems(patch),
		`test/e2e/x_test.go adds the string "kcp.io/original-api-version": use handlers.KCPOriginalAPIVersionAnnotation`,
		"Makefile tests for a flag with findstring",
	)

	// A Prow job a patch adds starts by /test only.
	prow := func(job string) string {
		return "diff --git a/.prow.yaml b/.prow.yaml\n--- a/.prow.yaml\n+++ b/.prow.yaml\n@@ -1,3 +1,12 @@\n presubmits:\n" +
			"   - name: pull-kcp-test-e2e\n     run_if_changed: \"(cmd|pkg)\"\n" + job + "   - name: pull-kcp-test-e2e-sharded\n"
	}
	complains(t, "a job that runs on every change", kcpPatchProblems(prow("+  - name: pull-kcp-x-race\n+    decorate: true\n+    optional: true\n+    run_if_changed: \"(cmd|pkg)\"\n+    spec:\n")),
		".prow.yaml adds pull-kcp-x-race, which starts on its own")
	complains(t, "a required job", kcpPatchProblems(prow("+  - name: pull-kcp-x-race\n+    always_run: false\n")), ".prow.yaml adds pull-kcp-x-race")
	complains(t, "a job started by /test", kcpPatchProblems(prow("+  # a comment\n+  - name: pull-kcp-x-race\n+    decorate: true\n+    optional: true\n+    always_run: false\n+    spec:\n+      containers:\n+        - name: x\n")))
}

// pinBumpProblems complains about the pin bump's text as it was before the
// review: our own script, a check of go.mod only, no fork pull request, the
// backports without /cherry-pick.
func TestPinBumpChecks(t *testing.T) {
	old := "## Summary\n\nThe fork fixes it on kcp-1.36.0.\n\n" +
		"  ```sh\n  bump-fork-pin.sh . v0.0.0-<date>-<commit>\n" +
		"  grep -c e006560fc76a go.mod docs/generators/cli-doc/go.mod staging/src/github.com/kcp-dev/virtual-workspace-framework/go.mod   # 0 in each\n  ```\n\n" +
		"Backport: `release-0.32` and `release-0.33` carry the bug too, for the maintainers to decide.\n\n" +
		"## Related Issue(s)\n\nFixes #4551\n\n## Release Notes\n\n```release-note\nFixed. Remove it with \"kubectl annotate <resource> <name> kcp.io/original-api-version-\".\n```\n"
	complains(t, "the old pin bump", pinBumpProblems(old, 0),
		"does not bump with kcp's own script",
		"does not grep go.sum", "does not grep docs/generators/cli-doc/go.sum", "does not grep staging/src/github.com/kcp-dev/virtual-workspace-framework/go.sum",
		"it must say that pull request comes first",
		"/cherry-pick release-0.32", "/cherry-pick release-0.33",
	)
	complains(t, "the old pin bump, to be linked", pinBumpProblems(old, 77), "kcp-dev/kubernetes#77",
		"does not bump", "go.sum", "cli-doc/go.sum", "framework/go.sum", "release-0.32", "release-0.33")
	complains(t, "the old pin bump's script and check", kcpTextProblems(old),
		"names the script bump-fork-pin.sh,", "checks the pin in go.mod but not", "checks the pin in docs/generators/cli-doc/go.mod but not",
		"checks the pin in staging/src/github.com/kcp-dev/virtual-workspace-framework/go.mod but not")
}

// kubernetesTextProblems complains about a text outside Kubernetes' template,
// with its comments, a relative link, the fork's conventions, and no word of
// #118040.
func TestKubernetesTextChecks(t *testing.T) {
	complains(t, "a text in kcp's template", kubernetesTextProblems("<!-- Thanks -->\n## Summary\n\nSee [the design](docs/design.md) and `UPSTREAM: <carry>: cacher: x`.\n\n## What Type of PR Is This?\n\n/kind feature\n"),
		"does not follow Kubernetes' template", "has an HTML comment", `links "docs/design.md"`, `names "UPSTREAM:"`, `names "<carry>"`, "does not refer to #118040")
	good := "#### What type of PR is this?\n\n/kind feature\n\n#### What this PR does / why we need it:\n\nIt checks the watch cache.\n\n" +
		"#### Which issue(s) this PR is related to:\n\nNone filed; #118040 proposed it.\n\n#### Special notes for your reviewer:\n\n- Off by default.\n\n" +
		"#### Does this PR introduce a user-facing change?\n\n```release-note\nNONE\n```\n\n" +
		"#### Additional documentation e.g., KEPs (Kubernetes Enhancement Proposals), usage docs, etc.:\n\n```docs\n\n```\n"
	complains(t, "Kubernetes' template", kubernetesTextProblems(good))
	complains(t, "without a release note", kubernetesTextProblems(strings.Replace(good, "```release-note\nNONE\n```\n\n", "", 1)), "does not follow Kubernetes' template")
	complains(t, "too long", kubernetesTextProblems(strings.Replace(good, "- Off by default.\n", strings.Repeat("- Off by default.\n", 40), 1)), "lines, want at most 50")
}

// The fork's k8s.io/apiserver at the carry's pin defines the constant the
// patch check points kcp's patches to.
func TestForkHasTheAnnotationConstant(t *testing.T) {
	root, err := reporoot.Find(".")
	if err != nil {
		t.Skipf("not in the kcp-carry repository: %v", err)
	}
	c, err := carryset.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range c.Modules {
		if in.Module != "k8s.io/apiserver" {
			continue
		}
		d, err := modcache.FetchVerified(context.Background(), root, in.Fork, in.ZipHash)
		if err != nil {
			t.Fatal(err)
		}
		z, err := zip.OpenReader(d.Zip)
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		for _, f := range z.File {
			if !strings.HasSuffix(f.Name, "/pkg/endpoints/handlers/response_kcp.go") {
				continue
			}
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			src, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), "\nconst KCPOriginalAPIVersionAnnotation = \"kcp.io/original-api-version\"\n") {
				t.Errorf("%s: no KCPOriginalAPIVersionAnnotation constant for kcp.io/original-api-version", f.Name)
			}
			return
		}
		t.Fatalf("%s: no pkg/endpoints/handlers/response_kcp.go", d.Zip)
	}
	t.Fatal("the carry has no k8s.io/apiserver")
}

// shellPrograms finds the programs of a command line, past quotes, loops,
// command substitutions, assignments, redirections and comments.
func TestShellPrograms(t *testing.T) {
	for line, want := range map[string][]string{
		`for i in $(seq 8); do (while :; do curl -s -H "Accept: $A" 'http://x/a|b'; done) & done`: {"seq", ":", "curl"},
		`sleep 7; kill $(jobs -p)   # the load; make x`:                                           {"sleep", "kill", "jobs"},
		`awk '{print ($14+$15)/100}' /proc/$(pgrep -x kcp)/stat 2>/dev/null | tee out && cat out`: {"awk", "pgrep", "tee", "cat"},
		`ACCEPT='a;b' kubectl get --raw /x | jq '.items[] | .x' > f`:                              {"kubectl", "jq"},
		`  bin/carry scrub || make test-x`:                                                        {"bin/carry", "make"},
	} {
		if got := shellPrograms(line); !slices.Equal(got, want) {
			t.Errorf("%s: programs %q, want %q", line, got, want)
		}
	}
}

// commentProblems complains about a comment that names this repository,
// runs its tools, links into it, leaves out what the comment must give, or
// quotes figures without their commands; the comment as the template
// writes it passes.
func TestCommentChecks(t *testing.T) {
	bad := "Use our carried kcp, see [docs](docs/watch-cache-off.md).\n\n```sh\nbin/carry scrub --apply\nmake test-watch-cache-off\n```\n\n" +
		"Measured on kcp v0.32.3 (2 cores): with the flag, 8 listers for 60 s: up.\n\n| objects | wildcard partial LIST p50 / p99 |\n|---|---|\n| 1,000 | 1 ms / 2 ms → 3 ms / 4 ms |\n"
	problems := commentProblems(bad)
	all := strings.Join(problems, "\n")
	for _, want := range []string{
		`names "Use our carried kcp, see [d"`, "bin/carry scrub --app\": the comment names nothing", "runs make, whose targets are ours: make test-watch-cache-off", "runs bin/carry:", "runs make:", `links "docs/watch-cache-off.md"`,
		"does not give the flag in kcp's Helm chart's values", "does not give the command that finds what is stored",
		"without the command that measures them on the reader's kcp (# the load)", "(# wildcard partial LIST)", "(# kcp peak RSS)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("a comment of ours: no complaint containing %q; got:\n%s", want, all)
		}
	}
	if len(problems) != 6+11+7 {
		t.Errorf("%d complaints, want 6, 11 things not given and 7 figures without a command:\n%s", len(problems), all)
	}
	text, err := render("issue-4551-comment.md.tmpl", prData{BaseRev: "e006560fc76a"})
	if err != nil {
		t.Fatal(err)
	}
	complains(t, "the comment without figures", commentProblems(string(text)))
}

// The fifth review: kcpTextLengthProblems refuses a text longer than
// GitHub shows in maxRenderedLines lines, and a figure with no command
// beside it; it lets figures stand in a block with a command, next to a
// code block of commands, in a list or table next to one, and lets names
// (versions, issues, commits, dates) be.
func TestKCPTextLengthChecks(t *testing.T) {
	long := strings.Repeat(strings.Repeat("word ", 30)+"\n\n", 21) // 21 paragraphs of 2 lines, and blank lines
	for _, c := range []struct {
		name, text string
		wants      []string
	}{
		{"too long", long, []string{"shows as 62 lines at 100 characters a line, want at most 60"}},
		{"short lines, many", strings.Repeat("line\n", 61), []string{"shows as 61 lines"}},
		{"a code block's lines count once each", "```sh\n" + strings.Repeat("make test-e2e "+strings.Repeat("x", 200)+"\n", 50) + "```\n", nil},
		{
			"figures without a command",
			"It took 123 s and 2.5 GiB on 2 cores.\n\n```sh\nmake test\n```\n\nWords between.\n\nIt failed 24 tests.\n\nThe job asks 12Gi.\n",
			[]string{"gives 24 without", "gives 12Gi without"},
		},
		{"figures beside a code span", "It took 123 s with `make test-e2e`.\n", nil},
		{
			"a list next to a code block",
			"The runs:\n\n- the first: 5 reports;\n- the second: 6 reports.\n\n```sh\nmake test-e2e-shared-minimal-race\n```\n\n| run | time |\n|---|---|\n| race | 123 s |\n",
			nil,
		},
		{
			"a list, then a paragraph, then the code",
			"- the first: 5 reports;\n- the second: 6 reports.\n\nSome words.\n\n```sh\nmake test\n```\n",
			[]string{"gives 5 without", "gives 6 without"},
		},
		{
			"output is no command",
			"It fails 3 tests:\n\n```\nFAIL example.com/pkg 0.5s\n```\n",
			[]string{"gives 3 without"},
		},
		{
			"a command nested in a list item",
			"1. The bump, 1 of 34:\n   ```sh\n   BRANCH=v0.0.0-<date>-<commit> ./hack/bump-k8s.sh\n   ```\n1. The test.\n",
			nil,
		},
		{
			"names, not figures",
			"kcp v0.32.3 and kcp-1.36.0 pin e006560fc76a (2026-06-02), as #4551 and kcp-dev/kcp#4551 say, on `release-0.32`.\n\n1. First.\n1. Second.\n",
			nil,
		},
		{"a release note is prose", "```release-note\nFixed 3 crashes.\n```\n", []string{"gives 3 without"}},
	} {
		complains(t, c.name, kcpTextLengthProblems(c.text), c.wants...)
	}
}

// forkMessageProblems refuses a fork commit's message that is long, gives a
// git command to find the carry it fixes, or repeats its pull request's
// text; a short message that names the carry passes.
func TestForkMessageChecks(t *testing.T) {
	pr := "## Summary\n\nFor a wildcard partial-metadata request, `setKCPOriginalAPIVersionAnnotation` writes into the cached object's own map, which every request reads.\n"
	long := strings.Repeat("A line of the message.\n", 16)
	complains(t, "long", forkMessageProblems(long, pr), "a message of 16 lines, want at most 15")
	complains(t, "git log", forkMessageProblems("Its subject is what\ngit log --diff-filter=A --format=%s -- response_kcp.go\nprints.\n", pr), "gives a git command")
	complains(t, "the text again", forkMessageProblems("Short.\n\nsetKCPOriginalAPIVersionAnnotation writes into the cached\nobject's own map, which every request reads.\n", pr), "repeats the pull request's text")
	complains(t, "short and its own", forkMessageProblems("Write into a copy of the annotations. This fixes the carry that\nadded response_kcp.go: squash it in at the next rebase.\n", pr))
}
