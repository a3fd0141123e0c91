package testkcp

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kcp-carry/kcp-carry/pkg/carry/kcppatches"
	"github.com/kcp-carry/kcp-carry/pkg/harness/racereport"
)

// CarriedFixes are the kcp-patches directories (relative to root) that the
// known list names as fixing a race and whose patches, in the main form or a
// backport's, the kcp tree carries already (series.AppliedIn): a race build
// made from tree has those fixes, so a report of a race one of them fixes is
// a failure (Known.Judge).
func CarriedFixes(t testing.TB, root, tree string, known racereport.Known) []string {
	t.Helper()
	var carried []string
	for _, dir := range known.Fixes() {
		pr, err := kcppatches.LoadPR(filepath.Join(root, dir))
		if err != nil {
			t.Fatalf("the known races name %s as a fix: %v", dir, err)
		}
		form, err := pr.CarriedForm(context.Background(), tree)
		if err != nil {
			t.Fatal(err)
		}
		ok := form != nil
		if ok {
			carried = append(carried, dir)
		}
		t.Logf("kcp tree %s carries %s: %t", tree, dir, ok)
	}
	return carried
}
