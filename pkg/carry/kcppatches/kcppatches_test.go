package kcppatches

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/util/gitexec"
)

// ApplyToCopy leaves the tree alone, copies it without .git, and commits
// each patch with its own author and subject; a tree the patch does not
// apply to (the file exists already) is an error naming the patch and the
// tree, and the copy holds no half-applied patch.
func TestApplyToCopy(t *testing.T) {
	// testdata/kcp-patches is one pull request of one new-file patch in git
	// format-patch form, with a kcp-style subject; export's tests use it too.
	root, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}

	tree := filepath.Join(t.TempDir(), "kcp-0123456789ab")
	files := map[string]string{"go.mod": "module github.com/kcp-dev/kcp\n", "test/e2e/conformance/old_test.go": "package conformance\n", ".git/HEAD": "not a real repository\n"}
	testfs.WriteTree(t, tree, files)
	dst := filepath.Join(t.TempDir(), "copy")
	ctx := context.Background()
	if err := ApplyToCopy(ctx, tree, dst, s); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(files, testfs.ReadTree(t, tree)); diff != "" {
		t.Errorf("the source tree changed (-before +after):\n%s", diff)
	}
	if got := testfs.Read(t, filepath.Join(dst, "test/e2e/conformance/new_test.go")); got != "package conformance\n\n// new\n" {
		t.Errorf("new_test.go in the copy = %q", got)
	}
	if got := testfs.Read(t, filepath.Join(dst, "test/e2e/conformance/old_test.go")); got != "package conformance\n" {
		t.Errorf("old_test.go in the copy = %q", got)
	}
	out := gitLog(t, dst)
	if want := "carry <carry@localhost> e2e: a new test\ncarry <carry@localhost> kcp tree from " + tree; out != want {
		t.Errorf("git log of the copy:\n%s\nwant:\n%s", out, want)
	}

	// A second run replaces the copy.
	if err := ApplyToCopy(ctx, tree, dst, s); err != nil {
		t.Fatalf("second run: %v", err)
	}

	// The patch's file exists already: git am refuses.
	testfs.Write(t, filepath.Join(tree, "test/e2e/conformance/new_test.go"), "package conformance\n")
	err = ApplyToCopy(ctx, tree, dst, s)
	if err == nil || !strings.Contains(err.Error(), "0001-e2e-a-new-test.patch does not apply to kcp tree "+tree) {
		t.Errorf("a tree the patch does not apply to: err = %v", err)
	}
}

const testPatch = "0001-e2e-a-new-test.patch"

// prTree is a kcp-patches/ of the named pull requests, each the testdata
// patch with its subject edited by subject.
func prTree(t *testing.T, subject func(string) string, prs ...string) string {
	t.Helper()
	root := t.TempDir()
	patch := testfs.Read(t, filepath.Join("testdata", Dir, "1-a-new-test", testPatch))
	files := map[string]string{}
	for _, pr := range prs {
		files[pr+"/series"] = testPatch + "\n"
		files[pr+"/"+testPatch] = subject(patch)
	}
	testfs.WriteTree(t, filepath.Join(root, Dir), files)
	return root
}

// Pull requests load in merge order, by number from 0 (10 after 2); anything else
// in kcp-patches/ and two pull requests with one number are refused, naming
// the entry.
func TestLoadOrder(t *testing.T) {
	same := func(s string) string { return s }
	prs, err := Load(prTree(t, same, "10-later", "2-race-e2e-target", "1-pin-bump", "0-bump-k8s-script"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pr := range prs {
		got = append(got, fmt.Sprintf("%d %s %d", pr.Order, pr.Name, len(pr.Series.Patches)))
	}
	if diff := cmp.Diff([]string{"0 0-bump-k8s-script 1", "1 1-pin-bump 1", "2 2-race-e2e-target 1", "10 10-later 1"}, got); diff != "" {
		t.Errorf("pull requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"0-bump-k8s-script/" + testPatch, "1-pin-bump/" + testPatch, "2-race-e2e-target/" + testPatch, "10-later/" + testPatch}, Names(prs)); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}

	for name, c := range map[string]struct {
		prs   []string
		extra string // a file written beside them
		want  string
	}{
		"a patch beside the directories": {[]string{"1-pin-bump"}, testPatch, testPatch + ": want only pull request directories named <merge order>-<name>"},
		"no merge order":                 {[]string{"pin-bump"}, "", "pin-bump: want only pull request directories"},
		"one number twice":               {[]string{"1-pin-bump", "1-other"}, "", "two pull requests numbered 1"},
		"a leading zero":                 {[]string{"01-pin-bump"}, "", "01-pin-bump: want only pull request directories"},
	} {
		root := prTree(t, same, c.prs...)
		if c.extra != "" {
			testfs.Write(t, filepath.Join(root, Dir, c.extra), "")
		}
		if _, err := Load(root); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("no kcp-patches/: no error")
	}
}

// A kcp patch with the fork's UPSTREAM: subject is refused, naming the line.
func TestLoadRefusesUpstreamSubject(t *testing.T) {
	root := prTree(t, func(s string) string {
		return strings.Replace(s, "Subject: [PATCH] e2e:", "Subject: [PATCH] UPSTREAM: <carry>: e2e:", 1)
	}, "1-pin-bump")
	_, err := Load(root)
	if err == nil || !strings.Contains(err.Error(), "1-pin-bump/0001-e2e-a-new-test.patch:3: subject \"UPSTREAM: <carry>: e2e: a new test\": kcp's commits do not use") {
		t.Errorf("Load of an UPSTREAM: subject: err = %v", err)
	}
}

func gitLog(t *testing.T, dir string) string {
	t.Helper()
	out, err := gitexec.Repo{Dir: dir}.Run(context.Background(), "log", "--format=%an <%ae> %s")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// A pull request whose main form does not apply to a tree is applied in its
// backport form (kcp-patches/<pr>/release-X.Y/); one that applies in neither
// names both and leaves no commit behind; any other subdirectory is refused.
func TestBackport(t *testing.T) {
	patch := testfs.Read(t, filepath.Join("testdata", Dir, "1-a-new-test", testPatch))
	const otherDir = "test/e2e/other/"
	backport := strings.ReplaceAll(patch, "test/e2e/conformance/", otherDir)
	root := t.TempDir()
	testfs.WriteTree(t, filepath.Join(root, Dir), map[string]string{
		"1-fix/series":                    testPatch + "\n",
		"1-fix/" + testPatch:              patch,
		"1-fix/release-0.32/series":       testPatch + "\n",
		"1-fix/release-0.32/" + testPatch: backport,
	})
	prs, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(prs[0].Backports) != 1 || prs[0].Backports[0].Branch != "release-0.32" || len(prs[0].Forms()) != 2 {
		t.Fatalf("backports of %s: %+v", prs[0].Name, prs[0].Backports)
	}
	ctx := context.Background()
	dst := filepath.Join(t.TempDir(), "copy")

	// main's layout: the main form.
	mainTree := t.TempDir()
	testfs.WriteTree(t, mainTree, map[string]string{"go.mod": "module github.com/kcp-dev/kcp\n"})
	if err := ApplyToCopy(ctx, mainTree, dst, prs); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, "test/e2e/conformance/new_test.go")); err != nil {
		t.Errorf("main form not applied to a tree it applies to")
	}

	// The main form's file exists already, the backport's does not: the backport.
	releaseTree := t.TempDir()
	testfs.WriteTree(t, releaseTree, map[string]string{"test/e2e/conformance/new_test.go": "package conformance\n"})
	if err := ApplyToCopy(ctx, releaseTree, dst, prs); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, otherDir+"new_test.go")); err != nil {
		t.Errorf("backport form not applied where the main form does not apply")
	}

	// Neither applies: both named, the copy left at its base commit.
	testfs.Write(t, filepath.Join(releaseTree, otherDir+"new_test.go"), "package other\n")
	err = ApplyToCopy(ctx, releaseTree, dst, prs)
	for _, want := range []string{"1-fix/" + testPatch + " does not apply", "1-fix/release-0.32/" + testPatch + " does not apply"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("neither form applies: err = %v, want %q", err, want)
		}
	}
	if out := gitLog(t, dst); strings.Count(out, "\n") != 0 {
		t.Errorf("git log after a failed pull request, want the base commit only:\n%s", out)
	}

	testfs.Write(t, filepath.Join(root, Dir, "1-fix", "old", "series"), "")
	if _, err := Load(root); err == nil || !strings.Contains(err.Error(), "want only backport directories named for kcp's release branch") {
		t.Errorf("a subdirectory that is no release branch: err = %v", err)
	}
}

// A pull request whose series lists no patch (a pin bump: its change is
// what kcp's hack/bump-k8s.sh makes) keeps its place in the merge order and
// applies as nothing: the copy gets the patches of the others only.
func TestPullRequestWithoutPatches(t *testing.T) {
	patch := testfs.Read(t, filepath.Join("testdata", Dir, "1-a-new-test", testPatch))
	root := t.TempDir()
	testfs.WriteTree(t, filepath.Join(root, Dir), map[string]string{
		"1-fix/series":                  testPatch + "\n",
		"1-fix/" + testPatch:            patch,
		"2-pin-bump/series":             "# no patch: the change is what hack/bump-k8s.sh makes\n",
		"3-after-the-bump/series":       testPatch + "\n",
		"3-after-the-bump/" + testPatch: strings.ReplaceAll(patch, "new_test.go", "later_test.go"),
	})
	prs, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1-fix/" + testPatch, "3-after-the-bump/" + testPatch}, Names(prs)); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	if len(prs) != 3 || prs[1].Name != "2-pin-bump" || len(prs[1].Series.Patches) != 0 {
		t.Fatalf("pull requests: %+v", prs)
	}
	tree := t.TempDir()
	testfs.WriteTree(t, tree, map[string]string{"go.mod": "module github.com/kcp-dev/kcp\n"})
	dst := filepath.Join(t.TempDir(), "copy")
	forms, err := ApplyToCopyForms(context.Background(), tree, dst, prs)
	if err != nil {
		t.Fatal(err)
	}
	if len(forms) != 3 || forms[1] != prs[1].Series {
		t.Errorf("forms applied: %v", forms)
	}
	if got := strings.Count(gitLog(t, dst), "\n") + 1; got != 3 {
		t.Errorf("the copy has %d commits, want 3 (the tree's, and one per patch):\n%s", got, gitLog(t, dst))
	}
}
