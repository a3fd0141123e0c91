package kcppatches

import (
	"context"
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
	// testdata/kcp-patches is one new-file patch in git format-patch form,
	// with a kcp-style subject; export's tests use it too.
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

// A kcp patch with the fork's UPSTREAM: subject is refused, naming the line.
func TestLoadRefusesUpstreamSubject(t *testing.T) {
	root := t.TempDir()
	patch := testfs.Read(t, filepath.Join("testdata", Dir, "0001-e2e-a-new-test.patch"))
	testfs.WriteTree(t, filepath.Join(root, Dir), map[string]string{
		"series":                    "0001-e2e-a-new-test.patch\n",
		"0001-e2e-a-new-test.patch": strings.Replace(patch, "Subject: [PATCH] e2e:", "Subject: [PATCH] UPSTREAM: <carry>: e2e:", 1),
	})
	_, err := Load(root)
	if err == nil || !strings.Contains(err.Error(), "0001-e2e-a-new-test.patch:3: subject \"UPSTREAM: <carry>: e2e: a new test\": kcp's commits do not use") {
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
