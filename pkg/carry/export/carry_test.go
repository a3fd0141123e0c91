package export

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
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
	testfs.NeedCommands(t, "git", "go")
	root, err := reporoot.Find(".")
	if err != nil {
		t.Skipf("not in the kcp-carry repository: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "staging-patches")); err != nil {
		t.Skipf("not in the kcp-carry repository: %v", err)
	}
	scratch := t.TempDir()
	out := filepath.Join(scratch, "pr")
	res, err := Run(context.Background(), Options{Author: submitter, Signoff: true, BaseBranch: testBranch, Root: root, OutDir: out, NoVerify: true})
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
		"\nFrom: A U Thor <author@example.com>\n",
		"Subject: [PATCH 1/",
		"diff --git a/staging/src/k8s.io/apiserver/pkg/endpoints/handlers/response_test.go b/staging/src/k8s.io/apiserver/pkg/endpoints/handlers/response_test.go\n",
		" staging/src/k8s.io/apiserver/pkg/endpoints/handlers/response_test.go ",
	)
	// Every patch, the fork's and kcp's, is by the submitter and signed off
	// by them, and nothing written names another identity: not this
	// repository's own (its commits' author), not one in the carry.
	var written []string
	for _, p := range res.Patches {
		written = append(written, filepath.Join(out, p.File))
	}
	for _, pr := range res.ForkPRs {
		for _, p := range pr.Patches {
			written = append(written, filepath.Join(out, p.File))
		}
	}
	for _, pr := range res.KCPPRs {
		for _, p := range pr.Patches {
			written = append(written, filepath.Join(out, p.File))
		}
	}
	if res.Upstream == nil {
		t.Fatal("no pull request for kubernetes/kubernetes exported (upstream-patches/kubernetes)")
	}
	for _, p := range res.Upstream.Patches {
		written = append(written, filepath.Join(out, p.File))
	}
	for _, path := range written {
		text := testfs.Read(t, path)
		if n := strings.Count(text, "\nFrom: "); n != 1 || !strings.Contains(text, "\nFrom: A U Thor <author@example.com>\n") {
			t.Errorf("%s: want one From: A U Thor <author@example.com>, got %d From: lines", path, n)
		}
		if signed := regexp.MustCompile(`(?m)^Signed-off-by: .*$`).FindAllString(text, -1); len(signed) != 1 || signed[0] != "Signed-off-by: A U Thor <author@example.com>" {
			t.Errorf("%s: sign-offs %q, want only the submitter's", path, signed)
		}
	}
	if own := projectAddress(t, root); own != "" {
		files, err := TreeFiles(out, nil)
		if err != nil {
			t.Fatal(err)
		}
		for name, text := range files {
			if strings.Contains(text, own) {
				t.Errorf("%s names the project's own address %s", name, own)
			}
		}
	}

	reviewChecklist(t, out, res, false)
	// The fix's pull request is the series' first two commits: the first
	// changes one line of an upstream file, response_test.go, which the
	// text explains; the fix changes none.
	if len(res.Patches) != 2 {
		t.Fatalf("the fix's patches = %+v", res.Patches)
	}
	if got := strings.Join(res.Patches[1].Files, " "); strings.Contains(got, "response.go") || strings.Contains(got, "response_test.go") {
		t.Errorf("the fix changes upstream files: %s", got)
	}
	testfs.ContainsAll(t, "PR.md", testfs.Read(t, res.PR),
		"That one line of `response_test.go` is needed because",
		"git checkout HEAD~1 && git checkout HEAD@{1} -- staging/src/k8s.io/apiserver/pkg/endpoints/handlers/response_kcp_test.go",
	)
	// The pin bump, exported without --fork-version and --fork-pr, shows
	// kcp's script with the version to fill in, and says the fork's pull
	// request comes first.
	testfs.ContainsAll(t, "the pin bump's PR.md", testfs.Read(t, filepath.Join(out, res.KCPPRs[0].PR)),
		"   BRANCH="+ForkVersionPlaceholder+" ./hack/bump-k8s.sh\n",
		"   grep -c e006560fc76a go.mod go.sum docs/generators/cli-doc/go.mod docs/generators/cli-doc/go.sum staging/src/github.com/kcp-dev/virtual-workspace-framework/go.mod staging/src/github.com/kcp-dev/virtual-workspace-framework/go.sum   # 0 in each\n",
		"That pull request comes first",
	)

	// A pull request with a backport form (kcp-patches/<pr>/release-X.Y/)
	// is exported with it, in the same layout, stamped like the main form.
	backports := 0
	for _, pr := range res.KCPPRs {
		for _, b := range pr.Backports {
			for _, p := range b.Patches {
				backports++
				if want := pr.Dir + "/" + b.Branch + "/"; !strings.HasPrefix(p.File, want) {
					t.Errorf("backport patch %s: want it under %s", p.File, want)
				}
				testfs.ContainsAll(t, p.File, testfs.Read(t, filepath.Join(out, p.File)), "\nFrom: ")
			}
		}
	}
	if backports == 0 {
		t.Errorf("no backport form exported; kcp-patches/3-clustercachedresource-selector-race has release-0.32/")
	}

	// The detector is the fork's pull request of its own, after the fix's:
	// one patch, in the watch cache and its tests.
	if len(res.ForkPRs) != 1 || res.ForkPRs[0].Name != "detector" || len(res.ForkPRs[0].Patches) != 1 {
		t.Fatalf("later fork pull requests = %+v, want the detector's, one patch", res.ForkPRs)
	}
	detector := res.ForkPRs[0]
	for _, f := range detector.Patches[0].Files {
		if !strings.HasPrefix(f, "staging/src/k8s.io/apiserver/pkg/storage/cacher/") {
			t.Errorf("the detector's patch changes %s, outside the cacher", f)
		}
	}
	testfs.ContainsAll(t, detector.PR, testfs.Read(t, filepath.Join(out, detector.PR)),
		"KUBE_CACHE_MUTATION_DETECTOR=1",
		"`pull-kcp-test-integration`",
		"Merge this after the pull request of `"+res.Title+"`",
		"cd staging/src/k8s.io/apiserver && go test -race -run TestWatchCacheMutationDetector ./pkg/storage/cacher/",
	)

	// The pull request for kubernetes/kubernetes: its own patch, cut on
	// upstream's k8s.io/apiserver at its staging path, which it applied to.
	up := res.Upstream
	if up.Dir != UpstreamDir || up.PR != UpstreamDir+"/"+PRFile || len(up.Base) != 1 || !strings.HasPrefix(up.Base[0], "k8s.io/apiserver@v") || len(up.Patches) != 1 {
		t.Errorf("the pull request for kubernetes/kubernetes = %+v", up)
	}
	for _, p := range up.Patches {
		if !strings.HasPrefix(p.File, UpstreamDir+"/0001-") || !slices.Equal(p.AppliesTo, up.Base) {
			t.Errorf("%s applies to %q, want it in %s/ and applied to %q", p.File, p.AppliesTo, UpstreamDir, up.Base)
		}
		for _, f := range p.Files {
			if !strings.HasPrefix(f, "staging/src/k8s.io/apiserver/pkg/storage/cacher/") {
				t.Errorf("%s changes %s, outside upstream's cacher", p.File, f)
			}
		}
	}
	testfs.ContainsAll(t, up.PR, testfs.Read(t, filepath.Join(out, up.PR)), "#118040", "KUBE_CACHE_MUTATION_DETECTOR", "`processEvent`", "`Replace`")

	compareWithOverlay(t, root, out, res, dirs)

	// Exported once the fork's pull requests are open and merged, the texts
	// say more (the pull request, the version, what the detector brings
	// kcp's jobs), and still pass the review.
	merged := filepath.Join(scratch, "merged")
	res, err = Run(context.Background(), Options{Author: submitter, Signoff: true, BaseBranch: testBranch, Root: root, OutDir: merged, NoVerify: true,
		ForkPR: 1234, ForkVersion: "v0.0.0-20261201120000-0123456789ab", ForkVersionIncludes: []string{"detector"}})
	if err != nil {
		t.Fatal(err)
	}
	reviewChecklist(t, merged, res, false)
}

// projectAddress is the e-mail of the repository's own commits at root, ""
// outside a git checkout.
func projectAddress(t *testing.T, root string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "log", "-1", "--format=%ae").Output()
	if err != nil {
		t.Logf("no git history at %s: %v", root, err)
		return ""
	}
	return strings.TrimSpace(string(out))
}

// TestCarryNamesNoPerson: the patches this repository keeps, the fork's,
// kcp's and Kubernetes', carry no author and no sign-off; carry export sets
// the person who submits them.
func TestCarryNamesNoPerson(t *testing.T) {
	root, err := reporoot.Find(".")
	if err != nil {
		t.Skipf("not in the kcp-carry repository: %v", err)
	}
	patches, err := filepath.Glob(filepath.Join(root, "staging-patches", "*", "*", "*.patch"))
	if err != nil {
		t.Fatal(err)
	}
	kcp, err := filepath.Glob(filepath.Join(root, "kcp-patches", "*", "*.patch"))
	if err != nil {
		t.Fatal(err)
	}
	upstream, err := filepath.Glob(filepath.Join(root, "upstream-patches", "*", "*.patch"))
	if err != nil {
		t.Fatal(err)
	}
	if len(patches) == 0 || len(kcp) == 0 || len(upstream) == 0 {
		t.Fatalf("no patches found under %s", root)
	}
	identity := regexp.MustCompile(`(?m)^(From|Signed-off-by|Co-authored-by): `)
	for _, p := range slices.Concat(patches, kcp, upstream) {
		if m := identity.FindString(testfs.Read(t, p)); m != "" {
			t.Errorf("%s has a %q line: the committed patches name no person", p, m)
		}
	}
}
