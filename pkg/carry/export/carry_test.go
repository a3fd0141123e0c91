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

// fixedCarry is the fork's carry that both fix commits fix: the commit
// that added the write into the cached objects' maps, as kcp-dev/kcp#4551
// names it (daae13cf0397 on the fork's kcp-1.37.0).
const fixedCarry = "UPSTREAM: <carry>: endpoints: set kcp.io/original-api-version on wildcard partial metadata requests"

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
	// The carry is on k8s.io/client-go (the detector's), k8s.io/apiserver
	// and k8s.io/apiextensions-apiserver (the identity storage's), in
	// dependency order.
	if len(res.Modules) != 3 || res.Modules[0].Module != "k8s.io/client-go" || res.Modules[1].Module != "k8s.io/apiserver" || res.Modules[2].Module != "k8s.io/apiextensions-apiserver" {
		t.Errorf("modules = %+v; want the carry on k8s.io/client-go, then k8s.io/apiserver, then k8s.io/apiextensions-apiserver", res.Modules)
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
		"which left `response_test.go` behind when it gave `asPartialObjectMetadataList` a context: hence the first commit's line there.",
		"git checkout HEAD~1 && git checkout HEAD@{1} -- staging/src/k8s.io/apiserver/pkg/endpoints/handlers/response_kcp_test.go",
		"Both commits fix the carry `"+fixedCarry+"`",
		"names the carry's commit on `kcp-1.37.0`, `daae13cf0397`",
	)
	// Each fix commit names the carry it fixes by its subject, as
	// kcp-dev/kcp#4551 names it, not by what it added.
	for _, p := range res.Patches {
		if body := strings.Join(strings.Fields(testfs.Read(t, filepath.Join(out, p.File))), " "); !strings.Contains(body, `carry "`+fixedCarry+`"`) {
			t.Errorf("%s does not name the carry it fixes, %q", p.File, fixedCarry)
		}
	}
	// The pin bump, exported without --fork-version and --fork-pr, shows
	// kcp's script with the version to fill in, and says the fork's pull
	// request comes first.
	bump := kcpPR(res, "pin-bump")
	if bump == nil {
		t.Fatalf("no pin bump among the kcp pull requests %+v", res.KCPPRs)
	}
	testfs.ContainsAll(t, "the pin bump's PR.md", testfs.Read(t, filepath.Join(out, bump.PR)),
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
	// client-go's cheaper detector, the cacher tests' compile fix and the
	// watch cache's detector. Then the identity storage's: the CRD handler
	// tests' compile fix and the sweep that keeps the storage.
	if len(res.ForkPRs) != 2 || res.ForkPRs[0].Name != "detector" || len(res.ForkPRs[0].Patches) != 4 ||
		res.ForkPRs[1].Name != "identity-storage" || len(res.ForkPRs[1].Patches) != 2 {
		t.Fatalf("later fork pull requests = %+v, want the detector's, four patches, and the identity storage's, two", res.ForkPRs)
	}
	for _, p := range res.ForkPRs[1].Patches {
		for _, f := range p.Files {
			if !strings.HasPrefix(f, "staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/") {
				t.Errorf("the identity storage's patch %s changes %s, outside the CRD handler's package", p.File, f)
			}
		}
	}
	detector := res.ForkPRs[0]
	for i, prefix := range []string{"staging/src/k8s.io/client-go/tools/cache/", "staging/src/k8s.io/client-go/tools/cache/", "staging/src/k8s.io/apiserver/pkg/storage/cacher/", "staging/src/k8s.io/apiserver/pkg/storage/cacher/"} {
		for _, f := range detector.Patches[i].Files {
			if !strings.HasPrefix(f, prefix) {
				t.Errorf("the detector's patch %d changes %s, outside %s", i+1, f, prefix)
			}
		}
	}
	testfs.ContainsAll(t, detector.PR, testfs.Read(t, filepath.Join(out, detector.PR)),
		"KUBE_WATCHCACHE_MUTATION_DETECTOR=true",
		"`KUBE_CACHE_MUTATION_DETECTOR` alone leaves the watch cache unchecked",
		"Merge this after the pull request of `"+res.Title+"`",
		"go test -race -run TestWatchCacheMutationDetector ./staging/src/k8s.io/apiserver/pkg/storage/cacher/",
		"`NewCacheMutationDetectorWithBackoff`",
	)

	// The pull requests for kubernetes/kubernetes: client-go's, then the
	// cacher's, each its own patch cut on upstream's modules at their
	// staging paths; the series applied to both. The cacher's adds the
	// client-go constructor it uses, so it stands without client-go's.
	up := res.Upstream
	if len(res.UpstreamBefore) != 1 || res.UpstreamBefore[0].Module != "k8s.io/client-go" || res.UpstreamBefore[0].Dir != UpstreamDir+"-client-go" {
		t.Errorf("the Kubernetes pull requests before the cacher's = %+v, want client-go's", res.UpstreamBefore)
	}
	if up.Dir != UpstreamDir || up.PR != UpstreamDir+"/"+PRFile || up.Module != "k8s.io/apiserver" || len(up.Base) != 2 || len(up.Patches) != 1 {
		t.Errorf("the pull request for kubernetes/kubernetes = %+v", up)
	}
	for _, pr := range append([]UpstreamPRResult{*up}, res.UpstreamBefore...) {
		for _, p := range pr.Patches {
			if !strings.HasPrefix(p.File, pr.Dir+"/") || !slices.Equal(p.AppliesTo, pr.Base) {
				t.Errorf("%s applies to %q, want it in %s/ and applied to %q", p.File, p.AppliesTo, pr.Dir, pr.Base)
			}
			if !strings.HasPrefix(p.Files[0], "staging/src/"+pr.Module+"/") {
				t.Errorf("%s changes %s first, outside %s, the module it is named after", p.File, p.Files[0], pr.Module)
			}
		}
	}
	testfs.ContainsAll(t, up.PR, testfs.Read(t, filepath.Join(out, up.PR)), "#118040", "KUBE_WATCHCACHE_MUTATION_DETECTOR", "`processEvent`", "`Replace`", "`NewCacheMutationDetectorWithBackoff`", "It stands on its own: it applies and its tests pass without `client-go/tools/cache: mutation detector compares once more when it stops`")
	testfs.ContainsAll(t, res.UpstreamBefore[0].PR, testfs.Read(t, filepath.Join(out, res.UpstreamBefore[0].PR)), "TestMutationDetectorReportsWriteBeforeStop", "`TestMutationDetector` is unchanged", "```release-note\nclient-go:")

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
