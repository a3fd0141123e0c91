package export

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

// kcp-patches/ is exported into kcp-dev-kcp/, with the submitter as author, once it applies
// with git am to every tree given; a tree it does not apply to stops the
// export, and no kcp-patches/ exports nothing.
func TestExportKCPPatches(t *testing.T) {
	ctx := context.Background()
	logf := func(format string, args ...any) { t.Logf(format, args...) }
	root := t.TempDir()
	if got, err := exportKCPPatches(ctx, root, t.TempDir(), nil, submitter, false, logf); err != nil || got != nil {
		t.Fatalf("without kcp-patches/: %v, %v", got, err)
	}

	// The kcppatches tests' kcp-patches/: one patch that creates
	// test/e2e/conformance/new_test.go.
	if err := os.CopyFS(filepath.Join(root, "kcp-patches"), os.DirFS("../kcppatches/testdata/kcp-patches")); err != nil {
		t.Fatal(err)
	}
	kcpTestPatch := testfs.Read(t, filepath.Join(root, "kcp-patches", "0001-e2e-a-new-test.patch"))
	tree := t.TempDir()
	testfs.Write(t, filepath.Join(tree, "go.mod"), "module github.com/kcp-dev/kcp\n")
	out := t.TempDir()
	got, err := exportKCPPatches(ctx, root, out, []string{tree}, submitter, true, logf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].File != "kcp-dev-kcp/0001-e2e-a-new-test.patch" || got[0].Subject != "e2e: a new test" ||
		strings.Join(got[0].Files, ",") != "test/e2e/conformance/new_test.go" || strings.Join(got[0].AppliesTo, ",") != tree {
		t.Errorf("exported: %+v", got)
	}
	// The source's bytes, by the submitter, signed off.
	want, err := stampIdentity([]byte(kcpTestPatch), submitter, true)
	if err != nil {
		t.Fatal(err)
	}
	exported := testfs.Read(t, filepath.Join(out, got[0].File))
	if exported != string(want) {
		t.Errorf("the exported patch is not the source's bytes by the submitter:\n%s", exported)
	}
	testfs.ContainsAll(t, got[0].File, exported, "\nFrom: A U Thor <author@example.com>\n", "\nSigned-off-by: A U Thor <author@example.com>\n---\n")

	testfs.Write(t, filepath.Join(tree, "test/e2e/conformance/new_test.go"), "package conformance\n")
	if _, err := exportKCPPatches(ctx, root, t.TempDir(), []string{tree}, submitter, false, logf); err == nil || !strings.Contains(err.Error(), "does not apply to kcp tree "+tree) {
		t.Errorf("a tree the patch does not apply to: err = %v", err)
	}
}
