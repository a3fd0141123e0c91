package export

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

const kcpTestPatch = `From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Carry Test <carry@example.com>
Date: Tue, 1 Dec 2026 10:00:00 +0000
Subject: [PATCH] UPSTREAM: <carry>: e2e: a regression test

---
 test/e2e/conformance/new_test.go | 1 +
 1 file changed, 1 insertion(+)
 create mode 100644 test/e2e/conformance/new_test.go

diff --git a/test/e2e/conformance/new_test.go b/test/e2e/conformance/new_test.go
new file mode 100644
index 0000000000000000000000000000000000000000..1111111111111111111111111111111111111111
--- /dev/null
+++ b/test/e2e/conformance/new_test.go
@@ -0,0 +1 @@
+package conformance
`

// kcp-patches/ is exported byte for byte into kcp-dev-kcp/ once it applies
// with git am to every tree given; a tree it does not apply to stops the
// export, and no kcp-patches/ exports nothing.
func TestExportKCPPatches(t *testing.T) {
	ctx := context.Background()
	logf := func(format string, args ...any) { t.Logf(format, args...) }
	root := t.TempDir()
	if got, err := exportKCPPatches(ctx, root, t.TempDir(), nil, logf); err != nil || got != nil {
		t.Fatalf("without kcp-patches/: %v, %v", got, err)
	}

	testfs.WriteTree(t, filepath.Join(root, "kcp-patches"), map[string]string{
		"series": "0001-e2e-a-regression-test.patch\n", "0001-e2e-a-regression-test.patch": kcpTestPatch,
	})
	tree := t.TempDir()
	testfs.Write(t, filepath.Join(tree, "go.mod"), "module github.com/kcp-dev/kcp\n")
	out := t.TempDir()
	got, err := exportKCPPatches(ctx, root, out, []string{tree}, logf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].File != "kcp-dev-kcp/0001-e2e-a-regression-test.patch" || got[0].Subject != "UPSTREAM: <carry>: e2e: a regression test" ||
		strings.Join(got[0].Files, ",") != "test/e2e/conformance/new_test.go" || strings.Join(got[0].AppliesTo, ",") != tree {
		t.Errorf("exported: %+v", got)
	}
	if data, err := os.ReadFile(filepath.Join(out, got[0].File)); err != nil || string(data) != kcpTestPatch {
		t.Errorf("the exported patch is not the source's bytes: %v", err)
	}

	testfs.Write(t, filepath.Join(tree, "test/e2e/conformance/new_test.go"), "package conformance\n")
	if _, err := exportKCPPatches(ctx, root, t.TempDir(), []string{tree}, logf); err == nil || !strings.Contains(err.Error(), "does not apply to kcp tree "+tree) {
		t.Errorf("a tree the patch does not apply to: err = %v", err)
	}
}
