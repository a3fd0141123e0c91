package export

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/module"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/internal/testproxy"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/carry/verify"
)

const forkVersion = "v0.0.0-20260101000000-aaaaaaaaaaaa"

// fixtureModule is a synthetic fork module and its carry.
type fixtureModule struct {
	module   string // the go.mod's module path
	forkPath string // where the fork publishes it
	requires []string
	files    map[string]string
	patches  []fixturePatch
}

type fixturePatch struct {
	name    string
	message string
	edit    func(t *testing.T, dir string)
}

// fixtureUpstream is an upstream module the proxy serves, and the pull
// request for Kubernetes cut on it: git commits on its tree laid out at
// staging/src/<module path>/, written to upstream-patches/kubernetes.
type fixtureUpstream struct {
	mod     module.Version
	files   map[string]string
	patches []fixturePatch
}

// newCarryFixture serves the modules' pristine trees from a test proxy
// and writes a project root pinning them (go.mod replaces, go.sum) with a
// carry in staging-patches/ made by git from the fixture's edits, and, with
// upstream, the upstream modules and upstream-patches/kubernetes.
func newCarryFixture(t *testing.T, mods []fixtureModule, upstream ...fixtureUpstream) string {
	t.Helper()
	testfs.NeedCommands(t, "git", "go")
	base := t.TempDir()
	proxy := filepath.Join(base, "proxy")
	root := filepath.Join(base, "proj")
	gomod := "module github.com/kcp-carry/kcp-carry\n\ngo 1.22\n\nrequire (\n"
	for _, m := range mods {
		gomod += "\t" + m.module + " v0.1.0\n"
	}
	gomod += ")\n\n"
	var gosum, replaces string
	for _, m := range mods {
		src := filepath.Join(base, "src", m.module)
		mf := "module " + m.module + "\n\ngo 1.22\n"
		for _, r := range m.requires {
			mf += "\nrequire " + r + " v0.0.0\n"
		}
		testfs.Write(t, filepath.Join(src, "go.mod"), mf)
		testfs.WriteTree(t, src, m.files)
		fork := module.Version{Path: m.forkPath, Version: forkVersion}
		h1, err := testproxy.Add(proxy, fork, src, nil)
		if err != nil {
			t.Fatal(err)
		}
		gosum += fork.Path + " " + fork.Version + " " + h1 + "\n"
		replaces += "replace " + m.module + " => " + fork.Path + " " + fork.Version + "\n"

		// The carry: commits on a git copy of the pristine tree.
		work := filepath.Join(base, "carry", m.module)
		if err := os.CopyFS(work, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		git(t, work, "init", "-q")
		git(t, work, "add", "-A", ".")
		git(t, work, "commit", "-q", "-m", "pristine")
		patchesDir := filepath.Join(root, "staging-patches", filepath.FromSlash(m.module))
		series := "# carry of " + m.module + "\n"
		for _, p := range m.patches {
			p.edit(t, work)
			testfs.Write(t, filepath.Join(patchesDir, p.name), commitPatch(t, work, p.message))
			series += p.name + "\n"
		}
		testfs.Write(t, filepath.Join(patchesDir, "series"), series)
	}
	if len(upstream) > 0 {
		work := filepath.Join(base, "kubernetes")
		upDir := filepath.Join(root, "upstream-patches", "kubernetes")
		baseFile, list := "", ""
		for _, u := range upstream {
			src := filepath.Join(base, "upstream", u.mod.String())
			testfs.WriteTree(t, src, u.files)
			h1, err := testproxy.Add(proxy, u.mod, src, nil)
			if err != nil {
				t.Fatal(err)
			}
			baseFile += u.mod.Path + " " + u.mod.Version + " " + h1 + "\n"
			testfs.WriteTree(t, filepath.Join(work, "staging/src", u.mod.Path), u.files)
		}
		git(t, work, "init", "-q")
		git(t, work, "add", "-A", ".")
		git(t, work, "commit", "-q", "-m", "upstream")
		for _, u := range upstream {
			for _, p := range u.patches {
				p.edit(t, work)
				patch, err := series.RemoveAuthor([]byte(commitPatch(t, work, p.message)))
				if err != nil {
					t.Fatal(err)
				}
				testfs.Write(t, filepath.Join(upDir, p.name), string(patch))
				list += p.name + "\n"
			}
		}
		testfs.Write(t, filepath.Join(upDir, "series"), list)
		testfs.Write(t, filepath.Join(upDir, "base"), baseFile)
	}
	testproxy.Serve(t, proxy, filepath.Join(base, "modcache"))
	testfs.Write(t, filepath.Join(root, "go.mod"), gomod+replaces)
	testfs.Write(t, filepath.Join(root, "go.sum"), gosum)
	return root
}

func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	content := testfs.Read(t, path)
	if !strings.Contains(content, old) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	testfs.Write(t, path, strings.Replace(content, old, new, 1))
}

const handlersGo = `package handlers

// Serve stands in for the response path.
func Serve() string {
	a := "one"
	b := "two"
	c := "three"
	d := "four"
	return a + b + c + d
}
`

// stagingFixture is two modules in Kubernetes' staging layout whose
// dependency order (zmachinery, then aserver, which requires it) is not
// their path order, and whose carry renames, deletes and creates files.
func stagingFixture(t *testing.T) string { return newCarryFixture(t, stagingModules) }

var stagingModules = []fixtureModule{
	{
		module:   "example.com/aserver",
		forkPath: "example.com/fork/staging/src/example.com/aserver",
		requires: []string{"example.com/zmachinery", "example.com/uncarried"},
		files: map[string]string{
			"handlers/old.go":  handlersGo,
			"handlers/gone.go": "package handlers\n\nconst gone = 1\n",
			"handlers/keep.go": "package handlers\n\nconst keep = 1\n",
		},
		patches: []fixturePatch{
			{
				name:    "0001-UPSTREAM-carry-handlers-move-serve.patch",
				message: "UPSTREAM: <carry>: handlers: move Serve to new.go\n\nServe lived in old.go.\n\nMove it, drop gone.go and add a script.\n",
				edit: func(t *testing.T, dir string) {
					git(t, dir, "mv", "handlers/old.go", "handlers/new.go")
					editFile(t, filepath.Join(dir, "handlers/new.go"), `"four"`, `"4"`)
					git(t, dir, "rm", "-q", "handlers/gone.go")
					editFile(t, filepath.Join(dir, "handlers/keep.go"), "keep = 1", "keep = 2")
					testfs.Write(t, filepath.Join(dir, "hack/run.sh"), "#!/bin/sh\necho run\n")
					if err := os.Chmod(filepath.Join(dir, "hack/run.sh"), 0o755); err != nil {
						t.Fatal(err)
					}
				},
			},
			{
				name:    "0002-UPSTREAM-carry-handlers-edit-serve.patch",
				message: "UPSTREAM: 12345: handlers: change Serve again\n\nChange it.\n\nThe new tests check it.\n",
				edit: func(t *testing.T, dir string) {
					editFile(t, filepath.Join(dir, "handlers/new.go"), `"one"`, `"1"`)
					testfs.Write(t, filepath.Join(dir, "handlers/new_test.go"), "package handlers\n")
				},
			},
		},
	},
	{
		module:   "example.com/zmachinery",
		forkPath: "example.com/fork/staging/src/example.com/zmachinery",
		files:    map[string]string{"meta/meta.go": "package meta\n\nvar Owned = false\n"},
		patches: []fixturePatch{{
			name:    "0001-UPSTREAM-carry-meta-own-the-maps.patch",
			message: "UPSTREAM: <carry>: meta: own the maps\n\nThe maps were shared\nwith the cache.\n\nClone the maps: the <carry> owns\n/clusters/*/ now.\n\nThe new tests check ownership.\n",
			edit: func(t *testing.T, dir string) {
				editFile(t, filepath.Join(dir, "meta/meta.go"), "false", "true")
				testfs.Write(t, filepath.Join(dir, "meta/meta_test.go"), "package meta\n")
			},
		}},
	},
}

// addKCPPRs gives root a kcp-patches/ of the named pull requests, each the
// kcppatches tests' one patch that creates test/e2e/conformance/new_test.go.
func addKCPPRs(t *testing.T, root string, prs ...string) {
	t.Helper()
	for _, pr := range prs {
		if err := os.CopyFS(filepath.Join(root, "kcp-patches", pr), os.DirFS("../kcppatches/testdata/kcp-patches/1-a-new-test")); err != nil {
			t.Fatal(err)
		}
	}
}

var stagingDirs = map[string]string{
	"example.com/aserver":    "staging/src/example.com/aserver",
	"example.com/zmachinery": "staging/src/example.com/zmachinery",
}

func TestExportStagingLayout(t *testing.T) {
	root := stagingFixture(t)
	addKCPPRs(t, root, "1-pin-bump", "2-a-new-test")
	out := filepath.Join(filepath.Dir(root), "out")
	res, err := Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: out, NoVerify: true})
	if err != nil {
		t.Fatal(err)
	}

	if res.Repo != "example.com/fork" || res.Base != "aaaaaaaaaaaa" || res.OutDir != out || res.PR != filepath.Join(out, PRFile) {
		t.Errorf("result = %+v", res)
	}
	var order []string
	for _, m := range res.Modules {
		order = append(order, m.Module+" "+m.Dir+" "+strings.Join(m.Requires, ","))
	}
	if want := []string{"example.com/zmachinery staging/src/example.com/zmachinery ", "example.com/aserver staging/src/example.com/aserver example.com/zmachinery"}; !slices.Equal(order, want) {
		t.Errorf("modules = %q, want %q", order, want)
	}
	var files []string
	for _, p := range res.Patches {
		files = append(files, p.File+" "+p.Module)
	}
	if want := []string{
		"0001-UPSTREAM-carry-meta-own-the-maps.patch example.com/zmachinery",
		"0002-UPSTREAM-carry-handlers-move-Serve-to-new.go.patch example.com/aserver",
		"0003-UPSTREAM-12345-handlers-change-Serve-again.patch example.com/aserver",
	}; !slices.Equal(files, want) {
		t.Errorf("patches = %q, want %q", files, want)
	}

	// Paths are fork paths everywhere, renames, new and deleted files and
	// the diffstat included; headers come from the carry patches.
	p2 := exportedContains(t, out, res.Patches[1].File,
		"From: A U Thor <author@example.com>\nDate: Thu, 1 Jan 2026 01:00:00 +0100\n",
		"Subject: [PATCH 2/3] UPSTREAM: <carry>: handlers: move Serve to new.go\n",
		"\nServe lived in old.go.\n\nMove it, drop gone.go and add a script.\n---\n",
		" staging/src/example.com/aserver/hack/run.sh",
		" staging/src/example.com/aserver/handlers/{old.go => new.go}",
		" create mode 100755 staging/src/example.com/aserver/hack/run.sh\n",
		" delete mode 100644 staging/src/example.com/aserver/handlers/gone.go\n",
		" rename staging/src/example.com/aserver/handlers/{old.go => new.go} (",
		"diff --git a/staging/src/example.com/aserver/handlers/old.go b/staging/src/example.com/aserver/handlers/new.go\n",
		"rename from staging/src/example.com/aserver/handlers/old.go\nrename to staging/src/example.com/aserver/handlers/new.go\n",
		"diff --git a/staging/src/example.com/aserver/hack/run.sh b/staging/src/example.com/aserver/hack/run.sh\nnew file mode 100755\n",
		"--- /dev/null\n+++ b/staging/src/example.com/aserver/hack/run.sh\n",
		"deleted file mode 100644\n",
		"--- a/staging/src/example.com/aserver/handlers/gone.go\n+++ /dev/null\n",
	)
	if !strings.HasPrefix(p2, "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n") {
		t.Errorf("%s does not start like git format-patch --zero-commit output:\n%s", res.Patches[1].File, p2)
	}
	unmapped := regexp.MustCompile(`(?m)^(diff --git a/|--- a/|\+\+\+ b/|rename from |rename to )(?:[^s]|s[^t])`)
	for _, p := range exportedPatches(t, out) {
		if m := unmapped.FindString(testfs.Read(t, p)); m != "" {
			t.Errorf("%s has a path outside the fork directories: %q", filepath.Base(p), m)
		}
	}
	if got := testfs.Read(t, filepath.Join(out, res.Patches[2].File)); !strings.Contains(got, "Subject: [PATCH 3/3] UPSTREAM: 12345: handlers: change Serve again\n") {
		t.Errorf("third patch subject:\n%s", got)
	}

	compareWithOverlay(t, root, out, res, stagingDirs)

	for _, p := range exportedPatches(t, out) {
		if text := testfs.Read(t, p); strings.Contains(text, "Signed-off-by:") || strings.Contains(text, "tester@example.com") {
			t.Errorf("%s: without --signoff, a patch carries a sign-off or another identity than the submitter's:\n%s", filepath.Base(p), text)
		}
	}

	testfs.ContainsAll(t, "PR.md", testfs.Read(t, res.PR),
		"git checkout HEAD~1 && git checkout HEAD@{1} -- staging/src/example.com/aserver/handlers/new_test.go",
		"pin aaaaaaaaaaaa (`grep aaaaaaaaaaaa go.mod`), on kcp-1.36.0; kcp-dev/kcp#4551 reports that v0.33.1 does too.\n",
	)
	// One directory per kcp pull request, in merge order; the pin bump's
	// text from its template, the other's from its commit message.
	var prs []string
	for _, pr := range res.KCPPRs {
		prs = append(prs, fmt.Sprintf("%s %s %v %d", pr.Dir, pr.PR, pr.Generic, len(pr.Patches)))
	}
	if want := []string{"kcp-dev-kcp/1-pin-bump kcp-dev-kcp/1-pin-bump/PR.md false 1", "kcp-dev-kcp/2-a-new-test kcp-dev-kcp/2-a-new-test/PR.md true 1"}; !slices.Equal(prs, want) {
		t.Errorf("kcp pull requests = %q, want %q", prs, want)
	}
	testfs.ContainsAll(t, "the generic PR.md", testfs.Read(t, filepath.Join(out, "kcp-dev-kcp/2-a-new-test/PR.md")), "## Summary\n\n`e2e: a new test`\n\nA body.\n")
	testfs.ContainsAll(t, "the pin bump's PR.md", testfs.Read(t, filepath.Join(out, "kcp-dev-kcp/1-pin-bump/PR.md")),
		"   BRANCH="+ForkVersionPlaceholder+" ./hack/bump-k8s.sh\n",
		"   grep -c aaaaaaaaaaaa go.mod go.sum docs/generators/cli-doc/go.mod",
		"The fork fixes it in a pull request to `kcp-dev/kubernetes`, on kcp-1.36.0. That pull request comes first",
	)
	if res.Title != "UPSTREAM: 12345: handlers: change Serve again" {
		t.Errorf("title %q", res.Title)
	}
	reviewChecklist(t, out, res, false)

	if entries, err := filepath.Glob(filepath.Join(filepath.Dir(out), ".out.tmp-*")); err != nil || len(entries) > 0 {
		t.Errorf("temporary output left behind: %v %v", entries, err)
	}

	// Deterministic: a second export with --force is byte-identical.
	again := filepath.Join(t.TempDir(), "again")
	if _, err := Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: again, NoVerify: true}); err != nil {
		t.Fatal(err)
	}
	a, _ := TreeFiles(out, nil)
	b, _ := TreeFiles(again, nil)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two exports differ:\n%s", diff)
	}

	// Once the fork merged the patches, --fork-version fills in the pin bump.
	merged := filepath.Join(t.TempDir(), "merged")
	res, err = Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: merged, NoVerify: true, ForkVersion: "v0.0.0-20261201120000-0123456789ab"})
	if err != nil {
		t.Fatal(err)
	}
	testfs.ContainsAll(t, "the pin bump's PR.md", testfs.Read(t, filepath.Join(merged, "kcp-dev-kcp/1-pin-bump/PR.md")),
		"   BRANCH=v0.0.0-20261201120000-0123456789ab ./hack/bump-k8s.sh\n",
		"on kcp-1.36.0, merged as v0.0.0-20261201120000-0123456789ab. That pull request comes first",
	)
	reviewChecklist(t, merged, res, false)
}

// TestExportKCPTexts exports kcp pull requests shaped like the
// repository's (testdata/kcp-patches: kcp's bump script fixed, the pin bump
// with its test, the label selector fix, the second pin bump without
// patches) with --fork-pr: the script's fix has its own text, first; the pin
// bump's says it comes first, then lists the bump and the test and links the
// fork's pull request; the selector fix's names its test's package; the
// second pin bump bumps with kcp's script, or says it is not needed when the
// first pin bump's fork version holds the detector; and the review checklist
// passes.
func TestExportKCPTexts(t *testing.T) {
	root := stagingFixture(t)
	if err := os.CopyFS(filepath.Join(root, "kcp-patches"), os.DirFS("testdata/kcp-patches")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	res, err := Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: out, NoVerify: true, ForkPR: 1234, ForkVersion: "v0.0.0-20261201120000-0123456789ab"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, pr := range res.KCPPRs {
		names = append(names, fmt.Sprintf("%s %v %d", pr.Name, pr.Generic, len(pr.Patches)))
	}
	if want := []string{"0-bump-k8s-script false 1", "1-pin-bump false 1", "3-clustercachedresource-selector-race false 1", "7-detector-pin-bump false 0"}; res.ForkPR != 1234 || !slices.Equal(names, want) {
		t.Fatalf("result: fork PR %d, kcp pull requests %q, want %q", res.ForkPR, names, want)
	}
	testfs.ContainsAll(t, "the script's PR.md", testfs.Read(t, filepath.Join(out, res.KCPPRs[0].PR)),
		"`hack/bump-k8s.sh` moves kcp's pin of `github.com/kcp-dev/kubernetes`, but only 1 of its replaces.",
		"grep -c '=> github.com/kcp-dev/kubernetes' go.mod   # 34 fork replaces\n",
		"grep -c aaaaaaaaaaaa go.mod go.sum docs/generators/cli-doc/go.mod",
		"\n/kind bug\n", "```release-note\nNONE\n```",
	)
	bump := testfs.Read(t, filepath.Join(out, res.KCPPRs[1].PR))
	testfs.ContainsAll(t, "the pin bump's PR.md", bump,
		"The fork fixes it in kcp-dev/kubernetes#1234, on kcp-1.36.0, merged as v0.0.0-20261201120000-0123456789ab. That pull request comes first",
		"The pull request `hack/bump-k8s.sh: move every fork replace of the three go.mod files` comes first too",
		"\n1. The bump: the go.mod and go.sum changes the script makes",
		"   BRANCH=v0.0.0-20261201120000-0123456789ab ./hack/bump-k8s.sh\n",
		"\n1. `e2e: a new test`: extends `TestBuiltInCrossLogicalClusterListPartialObjectMetadata` (`test/e2e/conformance/new_test.go`)",
		"make test-e2e WHAT=./test/e2e/conformance/ TEST_ARGS='-run ^TestBuiltInCrossLogicalClusterListPartialObjectMetadata$$'",
		"`/cherry-pick release-0.32` and `/cherry-pick release-0.33`",
	)
	if i, j := strings.Index(bump, "1. The bump:"), strings.Index(bump, "`e2e: a new test`"); i < 0 || j < i {
		t.Errorf("the bump is not the first commit of the pin bump's text:\n%s", bump)
	}
	testfs.ContainsAll(t, "the selector fix's PR.md", testfs.Read(t, filepath.Join(out, res.KCPPRs[2].PR)),
		"- `replication: guard the label selector with a lock` (`pkg/reconciler/cache/clustercachedresources/replication/replication_controller.go`, `pkg/reconciler/cache/clustercachedresources/replication/replication_controller_test.go`)\n",
		"go test -race -run TestSetLabelSelectorConcurrentWithReconcile ./pkg/reconciler/cache/clustercachedresources/replication/\n",
		"\n/kind bug\n",
	)
	testfs.ContainsAll(t, "the second pin bump's PR.md", testfs.Read(t, filepath.Join(out, res.KCPPRs[3].PR)),
		"after kcp-dev/kubernetes#1234, so it comes after the first pin bump, to v0.0.0-20261201120000-0123456789ab, which fixes #4551.",
		"BRANCH=v0.0.0-<date>-<commit> ./hack/bump-k8s.sh   # the fork commit that merged both\n",
	)
	reviewChecklist(t, out, res, false)

	// The first pin bump's fork version holds the detector: the second is
	// not needed, and says so.
	testfs.Write(t, filepath.Join(root, "staging-patches", ForkPRsFile), "detector example.com/aserver/0002-UPSTREAM-carry-handlers-edit-serve.patch\n")
	merged := filepath.Join(t.TempDir(), "merged")
	res, err = Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: merged, NoVerify: true, ForkPR: 1234,
		ForkVersion: "v0.0.0-20261201120000-0123456789ab", ForkVersionIncludes: []string{"detector"}})
	if err != nil {
		t.Fatal(err)
	}
	second := testfs.Read(t, filepath.Join(merged, res.KCPPRs[3].PR))
	testfs.ContainsAll(t, "the second pin bump's PR.md", second, "Not needed: the pin bump for #4551 pinned v0.0.0-20261201120000-0123456789ab")
	if strings.Contains(second, "./hack/bump-k8s.sh") {
		t.Errorf("the second pin bump, not needed, still bumps:\n%s", second)
	}
	reviewChecklist(t, merged, res, false)
}

// TestCompareWithOverlayFails is the positive control of the tree
// comparison: an exported series that changes a line differently, or that
// does not apply, must be caught.
func TestCompareWithOverlayFails(t *testing.T) {
	root := stagingFixture(t)
	out := filepath.Join(t.TempDir(), "out")
	if _, err := Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: out, NoVerify: true}); err != nil {
		t.Fatal(err)
	}
	patches := exportedPatches(t, out)
	want := overlayTrees(t, root)

	// A different added line: applies, but the trees differ.
	tampered := filepath.Join(t.TempDir(), "tampered.patch")
	testfs.Write(t, tampered, strings.Replace(testfs.Read(t, patches[0]), "+var Owned = true", "+var Owned = !false", 1))
	got, err := patchedTrees(t, root, stagingDirs, []string{tampered, patches[1], patches[2]})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); !strings.Contains(diff, "meta/meta.go") {
		t.Errorf("tampered series not caught; diff:\n%s", diff)
	}

	// A context line that is not in the pristine tree: does not apply.
	broken := filepath.Join(t.TempDir(), "broken.patch")
	testfs.Write(t, broken, strings.Replace(testfs.Read(t, patches[0]), " package meta\n", " package metax\n", 1))
	if _, err := patchedTrees(t, root, stagingDirs, []string{broken}); err == nil {
		t.Errorf("a series that does not apply was applied")
	}

	// A module-relative series (the carry itself) is not a fork series.
	if _, err := patchedTrees(t, root, stagingDirs, []string{filepath.Join(root, "staging-patches/example.com/zmachinery/0001-UPSTREAM-carry-meta-own-the-maps.patch")}); err == nil {
		t.Errorf("module-relative paths applied at the fork root")
	}
}

// TestExportForkRoot: a module replaced by the fork root maps to the
// repository root, next to a staging module it requires.
func TestExportForkRoot(t *testing.T) {
	root := newCarryFixture(t, []fixtureModule{
		{
			module:   "example.com/kube",
			forkPath: "github.com/example/fork",
			requires: []string{"example.com/lib"},
			files:    map[string]string{"cmd/main.go": "package main\n\nfunc main() {}\n", "README.md": "fork\n"},
			patches: []fixturePatch{{
				name:    "0001-UPSTREAM-carry-cmd-say-hello.patch",
				message: "UPSTREAM: <carry>: cmd: say hello\n\nSay hello.\n",
				edit: func(t *testing.T, dir string) {
					editFile(t, filepath.Join(dir, "cmd/main.go"), "func main() {}", "func main() { println(\"hello\") }")
				},
			}},
		},
		{
			module:   "example.com/lib",
			forkPath: "github.com/example/fork/staging/src/example.com/lib",
			files:    map[string]string{"lib.go": "package lib\n"},
			patches: []fixturePatch{{
				name:    "0001-UPSTREAM-carry-lib-add-a-file.patch",
				message: "UPSTREAM: <carry>: lib: add a file\n\nAdd it.\n",
				edit: func(t *testing.T, dir string) {
					testfs.Write(t, filepath.Join(dir, "added.go"), "package lib\n\nconst Added = true\n")
				},
			}},
		},
	})
	out := filepath.Join(t.TempDir(), "out")
	res, err := Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: out, NoVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Repo != "github.com/example/fork" || len(res.Patches) != 2 || res.Patches[0].Module != "example.com/lib" {
		t.Fatalf("result = %+v", res)
	}
	if got := testfs.Read(t, filepath.Join(out, res.Patches[0].File)); !strings.Contains(got, "diff --git a/staging/src/example.com/lib/added.go b/staging/src/example.com/lib/added.go\nnew file mode 100644\n") {
		t.Errorf("staging module patch:\n%s", got)
	}
	if got := testfs.Read(t, filepath.Join(out, res.Patches[1].File)); !strings.Contains(got, "diff --git a/cmd/main.go b/cmd/main.go\n") {
		t.Errorf("fork root patch:\n%s", got)
	}
	if !strings.Contains(testfs.Read(t, res.PR), "`), on "+testBranch+"; kcp-dev/kcp#4551") {
		t.Errorf("PR.md does not name the branch")
	}
	compareWithOverlay(t, root, out, res, map[string]string{"example.com/kube": "", "example.com/lib": "staging/src/example.com/lib"})
}

func TestExportOutDir(t *testing.T) {
	root := stagingFixture(t)
	ctx := context.Background()

	// An existing non-empty directory is refused and left alone.
	out := filepath.Join(t.TempDir(), "out")
	testfs.Write(t, filepath.Join(out, "keep.txt"), "mine")
	_, err := Run(ctx, Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: out, NoVerify: true})
	if err == nil || !strings.Contains(err.Error(), "--out "+out+": exists and is not empty") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("non-empty --out: %v", err)
	}
	if testfs.Read(t, filepath.Join(out, "keep.txt")) != "mine" {
		t.Errorf("--out changed")
	}
	// --force replaces it.
	if _, err := Run(ctx, Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: out, NoVerify: true, Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "keep.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("--force kept old content: %v", err)
	}
	if len(exportedPatches(t, out)) != 3 {
		t.Errorf("--force: patches not written")
	}

	// An empty directory is fine.
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: empty, NoVerify: true}); err != nil {
		t.Fatal(err)
	}

	// A file is not a directory.
	file := filepath.Join(t.TempDir(), "file")
	testfs.Write(t, file, "x")
	if _, err := Run(ctx, Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: file, NoVerify: true, Force: true}); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("file --out: %v", err)
	}

	// A carry patch that does not apply to the fork: the error names it,
	// and nothing is written.
	patch := filepath.Join(root, "staging-patches/example.com/zmachinery/0001-UPSTREAM-carry-meta-own-the-maps.patch")
	testfs.Write(t, patch, strings.Replace(testfs.Read(t, patch), "-var Owned = false", "-var Owned = maybe", 1))
	failed := filepath.Join(t.TempDir(), "failed")
	_, err = Run(ctx, Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: failed, NoVerify: true})
	if err == nil || !strings.Contains(err.Error(), "example.com/zmachinery: patch "+patch+" does not apply to example.com/fork at aaaaaaaaaaaa in staging/src/example.com/zmachinery/") {
		t.Errorf("patch that does not apply: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(failed)); len(entries) != 0 {
		t.Errorf("failed export left %v", entries)
	}
}

func TestExportBadInput(t *testing.T) {
	root := stagingFixture(t)
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "out")
	check := func(name string, opts Options, want string) {
		t.Helper()
		opts.Root, opts.OutDir = root, out
		if opts.Author == (Identity{}) {
			opts.Author = submitter
		}
		if opts.BaseBranch == "" {
			opts.BaseBranch = testBranch
		}
		if _, err := Run(ctx, opts); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", name, err, want)
		}
		if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %s written", name, out)
		}
	}
	check("no author", Options{NoVerify: true, Author: Identity{Name: "", Email: "a@example.com"}}, "no author for the patches: give --author")
	check("bad fork version", Options{NoVerify: true, ForkVersion: "v1.2.3"}, `--fork-version "v1.2.3": want the fork commit's pseudo-version`)
	check("bad fork pull request", Options{NoVerify: true, ForkPR: -1}, `--fork-pr -1: want the number of the fork's pull request (kcp-dev/kubernetes#N), a positive integer`)
	check("verify report and no verify", Options{NoVerify: true, VerifyReport: "x.json"}, "--verify-report and --no-verify exclude each other")
	check("missing verify report", Options{VerifyReport: filepath.Join(root, "nope.json")}, "--verify-report: open ")
	if _, err := Run(ctx, Options{Author: submitter, BaseBranch: testBranch, Root: root}); err == nil || !strings.Contains(err.Error(), "--out") {
		t.Errorf("no --out: %v", err)
	}

	// A missing pin names go.mod and the module.
	gomod := filepath.Join(root, "go.mod")
	saved := testfs.Read(t, gomod)
	testfs.Write(t, gomod, regexp.MustCompile(`(?m)^replace example.com/aserver .*\n`).ReplaceAllString(saved, ""))
	check("missing pin", Options{NoVerify: true}, gomod+": no replace directive for example.com/aserver")
	testfs.Write(t, gomod, saved)

	// Modules from two different forks cannot be one pull request.
	gosum := filepath.Join(root, "go.sum")
	savedSum := testfs.Read(t, gosum)
	testfs.Write(t, gosum, savedSum+strings.Replace(strings.SplitAfter(savedSum, "\n")[0], "example.com/fork/", "example.com/other/", 1))
	testfs.Write(t, gomod, strings.Replace(saved, "example.com/aserver => example.com/fork/staging/src/example.com/aserver", "example.com/aserver => example.com/other/staging/src/example.com/aserver", 1))
	check("two repositories", Options{NoVerify: true}, "example.com/aserver is pinned to example.com/other/staging/src/example.com/aserver@"+forkVersion+" (repository example.com/other at aaaaaaaaaaaa) but example.com/zmachinery to example.com/fork/staging/src/example.com/zmachinery@"+forkVersion+" (repository example.com/fork at aaaaaaaaaaaa); one pull request needs one repository and commit")
	testfs.Write(t, gomod, saved)
	testfs.Write(t, gosum, savedSum)

	// A subject outside the UPSTREAM: convention names the file and line.
	patch := filepath.Join(root, "staging-patches/example.com/aserver/0002-UPSTREAM-carry-handlers-edit-serve.patch")
	testfs.Write(t, patch, strings.Replace(testfs.Read(t, patch), "Subject: [PATCH] UPSTREAM: 12345: handlers:", "Subject: [PATCH] handlers:", 1))
	check("bad subject", Options{NoVerify: true}, patch+`:4: subject "handlers: change Serve again" does not match`)
}

// TestExportForkPRs: staging-patches/pull-requests splits the fork's series
// into pull requests, each a series of its own numbered from 1: the fix's at
// the top of --out, the later ones in kcp-dev-kubernetes-<name>/ with their
// text, which quotes its own patch's verify step and says that it merges
// after the fix's; together they still reproduce the overlay. With
// --fork-version-includes the pin bump says what the detector brings.
func TestExportForkPRs(t *testing.T) {
	root := stagingFixture(t)
	addKCPPRs(t, root, "1-pin-bump")
	const detector = "example.com/aserver/0002-UPSTREAM-carry-handlers-edit-serve.patch"
	testfs.Write(t, filepath.Join(root, "staging-patches", ForkPRsFile), "# later pull requests\ndetector "+detector+"\n")
	pkgs := []string{"example.com/aserver/handlers", "example.com/zmachinery/meta"}
	report := verifyReport(pkgs...)
	report.Series = seriesHashes(t, root)
	fix, later := report.Steps[0], report.Steps[0]
	fix.Module, fix.Patch = "example.com/aserver", "0001-UPSTREAM-carry-handlers-move-serve.patch"
	later.Module, later.Patch = "example.com/aserver", "0002-UPSTREAM-carry-handlers-edit-serve.patch"
	later.Without = &verify.Outcome{Name: "before the detector", Packages: []verify.PackageOutcome{{ImportPath: pkgs[0], FailedTests: []string{"TestDetector"}}}}
	report.Steps = []verify.Step{fix, later}
	reportFile := filepath.Join(t.TempDir(), "verify.json")
	writeJSONFile(t, reportFile, report)

	out := filepath.Join(t.TempDir(), "out")
	res, err := Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: out, VerifyReport: reportFile})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, p := range res.Patches {
		files = append(files, p.File)
	}
	if want := []string{"0001-UPSTREAM-carry-meta-own-the-maps.patch", "0002-UPSTREAM-carry-handlers-move-Serve-to-new.go.patch"}; !slices.Equal(files, want) {
		t.Errorf("the fix's patches = %q, want %q", files, want)
	}
	if len(res.ForkPRs) != 1 {
		t.Fatalf("later fork pull requests = %+v, want the detector's", res.ForkPRs)
	}
	pr := res.ForkPRs[0]
	if pr.Name != "detector" || pr.Dir != "kcp-dev-kubernetes-detector" || pr.PR != "kcp-dev-kubernetes-detector/PR.md" || pr.Title != "UPSTREAM: 12345: handlers: change Serve again" ||
		len(pr.Patches) != 1 || pr.Patches[0].File != "kcp-dev-kubernetes-detector/0001-UPSTREAM-12345-handlers-change-Serve-again.patch" {
		t.Errorf("the detector's pull request = %+v", pr)
	}
	if res.Title != "UPSTREAM: <carry>: handlers: move Serve to new.go" {
		t.Errorf("the fix's title = %q", res.Title)
	}
	if got := res.Modules[1].Patches; !slices.Equal(got, []string{files[1], pr.Patches[0].File}) {
		t.Errorf("aserver's patches = %q", got)
	}
	exportedContains(t, out, files[1], "Subject: [PATCH 2/2] UPSTREAM: <carry>: handlers: move Serve to new.go\n")
	exportedContains(t, out, pr.Patches[0].File, "\nFrom: A U Thor <author@example.com>\n", "Subject: [PATCH 1/1] UPSTREAM: 12345: handlers: change Serve again\n",
		"diff --git a/staging/src/example.com/aserver/handlers/new.go b/staging/src/example.com/aserver/handlers/new.go\n")
	compareWithOverlay(t, root, out, res, stagingDirs)

	fixText, detectorText := readOut(t, out, PRFile), readOut(t, out, pr.PR)
	testfs.ContainsAll(t, PRFile, fixText, "FAIL example.com/aserver/handlers (before 0001-fix.patch, with its tests)", "TestOwned")
	testfs.ContainsAll(t, pr.PR, detectorText,
		"- `UPSTREAM: 12345: handlers: change Serve again` (`new.go`, `new_test.go`)\n",
		"Without the change:\n\n```\nFAIL example.com/aserver/handlers (before the detector)\n",
		"Merge this after the pull request of `UPSTREAM: <carry>: handlers: move Serve to new.go`: ",
	)
	if strings.Contains(fixText, "TestDetector") || strings.Contains(detectorText, "TestOwned") {
		t.Errorf("a fork pull request quotes the other's verify step:\n%s\n%s", fixText, detectorText)
	}
	if strings.Contains(readOut(t, out, res.KCPPRs[0].PR), "KUBE_WATCHCACHE_MUTATION_DETECTOR") {
		t.Errorf("the pin bump speaks of the detector, which its fork version does not hold")
	}
	reviewChecklist(t, out, res, true)

	// The fork version holds the detector too; the fix's pull request has
	// its number.
	merged := filepath.Join(t.TempDir(), "merged")
	res, err = Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: merged, NoVerify: true, ForkPR: 77,
		ForkVersion: "v0.0.0-20261201120000-0123456789ab", ForkVersionIncludes: []string{"detector"}})
	if err != nil {
		t.Fatal(err)
	}
	testfs.ContainsAll(t, "the pin bump's PR.md", readOut(t, merged, res.KCPPRs[0].PR),
		"At v0.0.0-20261201120000-0123456789ab the fork's watch cache also has a mutation detector, under `KUBE_WATCHCACHE_MUTATION_DETECTOR`; this bump turns nothing on by itself")
	testfs.ContainsAll(t, pr.PR, readOut(t, merged, pr.PR), "Merge this after kcp-dev/kubernetes#77: ")
	reviewChecklist(t, merged, res, false)

	// What the file and the flag refuse, before anything is written.
	for _, c := range []struct{ file, want string }{
		{"detector\n", ":1: want <name> <module>/<patch file>"},
		{"Detector " + detector + "\n", ":1: want <name> <module>/<patch file>"},
		{"detector example.com/aserver/0009-nope.patch\n", ":1: example.com/aserver/0009-nope.patch is no patch of the carry"},
		{"detector example.com/zmachinery/0001-UPSTREAM-carry-meta-own-the-maps.patch\ndetector example.com/aserver/0001-UPSTREAM-carry-handlers-move-serve.patch\n", "leaves the fix's pull request none"},
		{"detector " + detector + "\ndetector example.com/aserver/0001-UPSTREAM-carry-handlers-move-serve.patch\n", ":2: the pull request detector starts twice in example.com/aserver"},
		{"detector " + detector + "\nlater example.com/aserver/0001-UPSTREAM-carry-handlers-move-serve.patch\n", ":2: example.com/aserver/0001-UPSTREAM-carry-handlers-move-serve.patch does not come after " + detector},
		{"other example.com/aserver/0001-UPSTREAM-carry-handlers-move-serve.patch\n", "fork-pr-other.md.tmpl"},
	} {
		testfs.Write(t, filepath.Join(root, "staging-patches", ForkPRsFile), c.file)
		bad := filepath.Join(t.TempDir(), "bad")
		if _, err := Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: bad, NoVerify: true}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.file, err, c.want)
		}
		if _, err := os.Stat(bad); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%q: %s written", c.file, bad)
		}
	}
	testfs.Write(t, filepath.Join(root, "staging-patches", ForkPRsFile), "detector "+detector+"\n")
	for _, c := range []struct {
		includes []string
		version  string
		want     string
	}{
		{[]string{"detector"}, "", "--fork-version-includes detector: give --fork-version too"},
		{[]string{"other"}, "v0.0.0-20261201120000-0123456789ab", "--fork-version-includes other: no such later fork pull request in " + filepath.Join(root, "staging-patches", ForkPRsFile)},
	} {
		if _, err := Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: filepath.Join(t.TempDir(), "bad"), NoVerify: true, ForkVersion: c.version, ForkVersionIncludes: c.includes}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--fork-version-includes %q: %v, want %q", c.includes, err, c.want)
		}
	}
}

// upstreamFixture is stagingFixture with a pull request for Kubernetes cut
// on example.com/aserver v0.2.0, which the proxy serves as upstream's.
func upstreamFixture(t *testing.T) string {
	return newCarryFixture(t, stagingModules, fixtureUpstream{
		mod:   module.Version{Path: "example.com/aserver", Version: "v0.2.0"},
		files: map[string]string{"go.mod": "module example.com/aserver\n\ngo 1.22\n", "handlers/keep.go": "package handlers\n\nconst keep = 1\n"},
		patches: []fixturePatch{{
			name:    "0001-handlers-keep-two.patch",
			message: "handlers: keep two\n\nKeep two, and test it.\n",
			edit: func(t *testing.T, dir string) {
				editFile(t, filepath.Join(dir, "staging/src/example.com/aserver/handlers/keep.go"), "keep = 1", "keep = 2")
				testfs.Write(t, filepath.Join(dir, "staging/src/example.com/aserver/handlers/keep_test.go"), "package handlers\n")
			},
		}},
	})
}

// TestExportUpstream: upstream-patches/kubernetes is written to
// kubernetes-kubernetes/, its patch by the submitter (signed off with
// --signoff) after it applied with git am to the upstream module it is cut
// on, laid out at its staging path, with a text in Kubernetes' template. A
// patch that does not apply there, or a base module whose zip is not the one
// named, stops the export before anything is written.
func TestExportUpstream(t *testing.T) {
	root := upstreamFixture(t)
	addKCPPRs(t, root, "1-pin-bump")
	out := filepath.Join(t.TempDir(), "out")
	res, err := Run(context.Background(), Options{Author: submitter, Signoff: true, BaseBranch: testBranch, Root: root, OutDir: out, NoVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	up := res.Upstream
	if up == nil || up.Dir != "kubernetes-kubernetes" || up.PR != "kubernetes-kubernetes/PR.md" || up.Title != "handlers: keep two" ||
		!slices.Equal(up.Base, []string{"example.com/aserver@v0.2.0"}) || len(up.Patches) != 1 {
		t.Fatalf("the pull request for kubernetes/kubernetes = %+v", up)
	}
	p := up.Patches[0]
	if p.File != "kubernetes-kubernetes/0001-handlers-keep-two.patch" || !slices.Equal(p.AppliesTo, up.Base) ||
		!slices.Equal(p.Files, []string{"staging/src/example.com/aserver/handlers/keep.go", "staging/src/example.com/aserver/handlers/keep_test.go"}) {
		t.Errorf("its patch = %+v", p)
	}
	exportedContains(t, out, p.File, "\nFrom: A U Thor <author@example.com>\n", "Subject: [PATCH] handlers: keep two\n", "\nSigned-off-by: A U Thor <author@example.com>\n",
		"diff --git a/staging/src/example.com/aserver/handlers/keep.go b/staging/src/example.com/aserver/handlers/keep.go\n")
	testfs.ContainsAll(t, up.PR, readOut(t, out, up.PR), "#### What type of PR is this?\n\n/kind feature\n", "#118040")
	reviewChecklist(t, out, res, false)

	upDir := filepath.Join(root, "upstream-patches", "kubernetes")
	patch := filepath.Join(upDir, "0001-handlers-keep-two.patch")
	good := testfs.Read(t, patch)
	testfs.Write(t, patch, strings.Replace(good, "-const keep = 1", "-const keep = 3", 1))
	bad := filepath.Join(t.TempDir(), "bad")
	if _, err := Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: bad, NoVerify: true}); err == nil ||
		!strings.Contains(err.Error(), patch+" does not apply to example.com/aserver@v0.2.0 (git am)") {
		t.Errorf("a patch that does not apply upstream: %v", err)
	}
	testfs.Write(t, patch, good)
	baseFile := filepath.Join(upDir, "base")
	testfs.Write(t, baseFile, "example.com/aserver v0.2.0 h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
	if _, err := Run(context.Background(), Options{Author: submitter, BaseBranch: testBranch, Root: root, OutDir: bad, NoVerify: true}); err == nil ||
		!strings.Contains(err.Error(), baseFile+": example.com/aserver@v0.2.0: zip ") {
		t.Errorf("a base zip of another hash: %v", err)
	}
	if _, err := os.Stat(bad); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed export wrote %s", bad)
	}
}
