package export

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcppatches"
)

// exportKCPPatches writes root's kcp-patches/ into out as Run does: the
// list's kcp pull requests, checked on trees, each written in the loop.
func exportKCPPatches(ctx context.Context, root, out string, trees []string, who Identity, signoff bool, progress func(string, ...any)) ([]KCPPRResult, error) {
	src := &sources{root: root}
	if _, err := os.Stat(filepath.Join(root, kcppatches.Dir)); err == nil {
		if src.kcp, err = kcppatches.Load(root); err != nil {
			return nil, err
		}
	}
	prs, err := src.pullRequests()
	if err != nil {
		return nil, err
	}
	st := &exportState{o: Options{Author: who, Signoff: signoff}, tmp: out, res: &Result{}, kcpEarlier: map[string]string{}}
	if st.kcpApplies, err = checkKCPTrees(ctx, src, trees, progress); err != nil {
		return nil, err
	}
	for _, pr := range prs {
		if err := pr.kind.write(ctx, st, pr); err != nil {
			return nil, err
		}
	}
	return st.res.KCPPRs, nil
}

// kcp-patches/<pull request>/ is exported into kcp-dev-kcp/<pull request>/,
// with the submitter as author, once it applies with git am to every tree
// given; a tree it does not apply to stops the export, and no kcp-patches/
// exports nothing.
func TestExportKCPPatches(t *testing.T) {
	ctx := context.Background()
	logf := func(format string, args ...any) { t.Logf(format, args...) }
	root := t.TempDir()
	if got, err := exportKCPPatches(ctx, root, t.TempDir(), nil, submitter, false, logf); err != nil || got != nil {
		t.Fatalf("without kcp-patches/: %v, %v", got, err)
	}

	// One pull request of one patch that creates
	// test/e2e/conformance/new_test.go.
	addKCPPRs(t, root, "1-pin-bump")
	kcpTestPatch := testfs.Read(t, filepath.Join(root, "kcp-patches", "1-pin-bump", "0001-e2e-a-new-test.patch"))
	tree := t.TempDir()
	testfs.Write(t, filepath.Join(tree, "go.mod"), "module github.com/kcp-dev/kcp\n")
	out := t.TempDir()
	got, err := exportKCPPatches(ctx, root, out, []string{tree}, submitter, true, logf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Dir != "kcp-dev-kcp/1-pin-bump" || got[0].PR != "kcp-dev-kcp/1-pin-bump/PR.md" || len(got[0].Patches) != 1 {
		t.Fatalf("exported: %+v", got)
	}
	if p := got[0].Patches[0]; p.File != "kcp-dev-kcp/1-pin-bump/0001-e2e-a-new-test.patch" || p.Subject != "e2e: a new test" ||
		strings.Join(p.Files, ",") != "test/e2e/conformance/new_test.go" || strings.Join(p.AppliesTo, ",") != tree {
		t.Errorf("exported: %+v", p)
	}
	// The source's bytes, by the submitter, signed off.
	want, err := stampIdentity([]byte(kcpTestPatch), submitter, true)
	if err != nil {
		t.Fatal(err)
	}
	exported := testfs.Read(t, filepath.Join(out, got[0].Patches[0].File))
	if exported != string(want) {
		t.Errorf("the exported patch is not the source's bytes by the submitter:\n%s", exported)
	}
	testfs.ContainsAll(t, got[0].Patches[0].File, exported, "\nFrom: A U Thor <author@example.com>\n", "\nSigned-off-by: A U Thor <author@example.com>\n---\n")

	testfs.Write(t, filepath.Join(tree, "test/e2e/conformance/new_test.go"), "package conformance\n")
	if _, err := exportKCPPatches(ctx, root, t.TempDir(), []string{tree}, submitter, false, logf); err == nil || !strings.Contains(err.Error(), "does not apply to kcp tree "+tree) {
		t.Errorf("a tree the patch does not apply to: err = %v", err)
	}
}
