package export

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/util/reporoot"
)

// TestExportTheCarry exports this repository's carry and checks, outside
// the export code, that the series applied with plain `git am` to the
// pristine fork modules (the go.sum-verified zips at their fork paths)
// gives exactly the trees `carry overlay` builds (overlay.Run, into a
// scratch directory). It uses the real module cache and proxy, like
// `carry overlay`.
func TestExportTheCarry(t *testing.T) {
	needGit(t)
	root, err := reporoot.Find(".")
	if err != nil {
		t.Skipf("not in the kcp-carry repository: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "staging-patches")); err != nil {
		t.Skipf("not in the kcp-carry repository: %v", err)
	}
	// Evidence files of its own, not the repository's evidence/, which
	// other runs write.
	scratch := t.TempDir()
	suite, bench := filepath.Join(scratch, "suite.txt"), filepath.Join(scratch, "bench.txt")
	testfs.Write(t, suite, "suite result\n")
	testfs.Write(t, bench, "benchstat table\n")
	out := filepath.Join(scratch, "pr")
	res, err := Run(context.Background(), Options{Root: root, OutDir: out, NoVerify: true, SuiteReport: suite, Benchstat: bench})
	if err != nil {
		t.Fatal(err)
	}
	if res.Repo != "github.com/kcp-dev/kubernetes" {
		t.Errorf("repo = %s", res.Repo)
	}
	// The carry is on k8s.io/apiserver; the order of several modules is
	// covered by the synthetic export tests.
	if len(res.Modules) != 1 || res.Modules[0].Module != "k8s.io/apiserver" {
		t.Errorf("modules = %+v; want the carry on k8s.io/apiserver", res.Modules)
	}
	dirs := map[string]string{}
	for _, m := range res.Modules {
		if want := "staging/src/" + m.Module; m.Dir != want {
			t.Errorf("%s maps to %q, want %q", m.Module, m.Dir, want)
		}
		dirs[m.Module] = "staging/src/" + m.Module
	}
	exportedContains(t, out, res.Patches[0].File,
		"Subject: [PATCH 1/",
		"diff --git a/staging/src/k8s.io/apiserver/pkg/endpoints/handlers/response_test.go b/staging/src/k8s.io/apiserver/pkg/endpoints/handlers/response_test.go\n",
		" staging/src/k8s.io/apiserver/pkg/endpoints/handlers/response_test.go ",
		"Signed-off-by: ",
	)

	pr := testfs.Read(t, res.PR)
	testfs.ContainsAll(t, "PR.md", pr,
		"on `e006560fc76a`",
		fmt.Sprintf("**1/%d `%s`** (`k8s.io/apiserver`, +%d −%d): ", len(res.Patches), res.Patches[0].Subject, res.Patches[0].Added, res.Patches[0].Deleted),
		"`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/response_kcp_test.go` (new)",
		"## The contract",
		"`docs/design.md`",
		"```\nsuite result\n```",
		"```\nbenchstat table\n```",
	)

	compareWithOverlay(t, root, out, dirs)
}
