package export

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
)

// TestPullRequestsList: the repository's list has every pull request once,
// in merge order, each with its upstream, base, what it merges after,
// whether it is a fix, and its presubmit's checks as its upstream's CI runs
// them for the files it touches.
func TestPullRequestsList(t *testing.T) {
	testfs.NeedCommands(t, "go")
	all := repoPullRequests(t)
	// A later fork pull request added to staging-patches/pull-requests since
	// is checked for its place only: after the detector's, before
	// Kubernetes'.
	var prs []*PullRequest
	for i, pr := range all {
		if pr.Upstream != UpstreamFork || pr.Name == ForkFixName || pr.Name == ForkPRDirPrefix+"detector" {
			prs = append(prs, pr)
			continue
		}
		if i < 2 || all[i-1].Upstream != UpstreamFork || !slices.Contains(pr.After, ForkPRDirPrefix+"detector") {
			t.Errorf("the later fork pull request %s at %d: want it after the fork's detector (after %q)", pr.Name, i, pr.After)
		}
	}
	const (
		fork, kcp, kube = UpstreamFork, UpstreamKCP, UpstreamKubernetes
		pin, main       = "pin e006560fc76a", "main"
		k8sBase         = "k8s.io/apiserver@v0.37.2, k8s.io/client-go@v0.37.2"
		k0, k1, k2, k3  = "kcp-dev-kcp/0-bump-k8s-script", "kcp-dev-kcp/1-pin-bump", "kcp-dev-kcp/2-informer-restmapper-race", "kcp-dev-kcp/3-clustercachedresource-selector-race"
		k4, k5, k6, k7  = "kcp-dev-kcp/4-race-e2e-target", "kcp-dev-kcp/5-partial-metadata-watch-caches", "kcp-dev-kcp/6-identity-partial-metadata", "kcp-dev-kcp/7-detector-pin-bump"
		k8, detector    = "kcp-dev-kcp/8-watch-cache-mutation-detector", "kcp-dev-kubernetes-detector"
	)
	// checks are each check's String(), e2e ones with "e2e: " before it.
	for i, want := range []struct {
		name, upstream, base string
		fix                  bool
		after                []string
		checks               []string
	}{
		{ForkFixName, fork, pin, true, nil, []string{
			"go test -race -count=1 -timeout=3m0s k8s.io/apiserver/pkg/endpoints/handlers"}},
		{detector, fork, pin, true, []string{ForkFixName}, []string{
			"go test -race -count=1 -timeout=3m0s -run '^TestMutationDetector' k8s.io/client-go/tools/cache",
			"go test -race -count=1 -timeout=3m0s -run '^TestWatchCacheMutationDetector' k8s.io/apiserver/pkg/storage/cacher"}},
		{"kubernetes-kubernetes-client-go", kube, k8sBase, true, nil, []string{
			"cd staging/src/k8s.io/client-go && go test -race -count=1 -timeout=3m0s ./tools/cache/"}},
		{"kubernetes-kubernetes", kube, k8sBase, true, []string{"kubernetes-kubernetes-client-go"}, []string{
			"cd staging/src/k8s.io/apiserver && go test -race -count=1 -timeout=3m0s ./pkg/storage/cacher/",
			"cd staging/src/k8s.io/client-go && go test -race -count=1 -timeout=3m0s ./tools/cache/"}},
		{k0, kcp, main, false, nil, []string{}},
		{k1, kcp, main, false, []string{k0, ForkFixName}, []string{
			"go vet ./test/e2e/conformance/",
			"e2e: make test-e2e-shared-minimal WHAT=./test/e2e/conformance/ 'TEST_ARGS=-run \"^(TestBuiltInCrossLogicalClusterListPartialObjectMetadata)$$\" -timeout 60m'"}},
		{k2, kcp, main, true, []string{k0, k1}, []string{
			"go test -race -count=1 ./pkg/informer/",
			"go vet ./pkg/informer/ ./test/integration/framework/"}},
		{k3, kcp, main, true, []string{k0, k1, k2}, []string{
			"go test -race -count=1 ./pkg/reconciler/cache/clustercachedresources/replication/",
			"go vet ./pkg/reconciler/cache/clustercachedresources/replication/"}},
		{k3 + "/release-0.32", kcp, "release-0.32", true, []string{k3}, []string{
			"go test -race -count=1 ./pkg/reconciler/cache/cachedresources/replication/",
			"go vet ./pkg/reconciler/cache/cachedresources/replication/"}},
		{k4, kcp, main, false, []string{k0, k1, k2, k3}, nil},
		{k5, kcp, main, false, []string{k0, k1, k2, k3, k4}, nil},
		{k6, kcp, main, true, []string{k0, k1, k2, k3, k4, k5}, nil},
		{k7, kcp, main, false, []string{k0, k1, k2, k3, k4, k5, k6, detector}, []string{}},
		{k8, kcp, main, false, []string{k0, k1, k2, k3, k4, k5, k6, k7}, []string{}},
	} {
		if i >= len(prs) {
			t.Fatalf("%d pull requests, want %s at %d", len(prs), want.name, i)
		}
		pr := prs[i]
		if pr.Name != want.name || pr.Upstream != want.upstream || pr.Base != want.base || pr.Fix != want.fix || !slices.Equal(pr.After, want.after) {
			t.Errorf("pull request %d = %s (%s, base %q, fix %v, after %q); want %s (%s, base %q, fix %v, after %q)",
				i, pr.Name, pr.Upstream, pr.Base, pr.Fix, pr.After, want.name, want.upstream, want.base, want.fix, want.after)
		}
		var checks []string
		for _, c := range pr.Presubmit {
			s := c.String()
			if c.E2E {
				s = "e2e: " + s
			}
			checks = append(checks, s)
		}
		if want.checks != nil && !slices.Equal(checks, want.checks) {
			t.Errorf("%s: presubmit\n  %s\nwant\n  %s", pr.Name, strings.Join(checks, "\n  "), strings.Join(want.checks, "\n  "))
		}
		if len(pr.Patches) == 0 && pr.Name != k7 {
			t.Errorf("%s has no patches", pr.Name)
		}
	}
	if len(prs) != 14 {
		t.Errorf("%d pull requests besides later fork ones, want 14", len(prs))
	}
	// Every kcp pull request's tests, e2e ones as kcp's e2e target runs them
	// (PR 6's identity test among them).
	for _, pr := range prs {
		if pr.Name != k6 {
			continue
		}
		var e2e, race bool
		for _, c := range pr.Presubmit {
			e2e = e2e || c.E2E && strings.Contains(c.String(), "TestCrossLogicalClusterPartialObjectMetadataThroughIdentity")
			race = race || c.Tests && slices.Contains(c.Command, "-race") && slices.Contains(c.Command, "./pkg/server/filters/")
		}
		if !e2e || !race {
			t.Errorf("%s: presubmit %v: want its identity e2e test and go test -race of ./pkg/server/filters/", pr.Name, pr.Presubmit)
		}
	}
}

// fakeKind prepares a tree holding "with" when the pull request is applied,
// "without" when only its tests are.
type fakeKind struct{ with, without string }

func (fakeKind) write(context.Context, *exportState, *PullRequest) error { return nil }
func (fakeKind) render(prData, *exportState, *PullRequest) (prTexts, error) {
	return nil, nil
}

func (k fakeKind) prepare(_ context.Context, _ *presubmitEnv, _ *PullRequest, dst string, mode prepareMode) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	content := k.with
	if mode == withoutPR {
		content = k.without
	}
	return os.WriteFile(filepath.Join(dst, "state"), []byte(content), 0o644)
}

// TestPresubmitFake: a check that passes is green, one that fails red; a
// fix whose test fails without it is red without it, one whose test passes
// without it is not, and either red makes the report not OK.
func TestPresubmitFake(t *testing.T) {
	testfs.NeedCommands(t, "sh")
	// passIfGood passes when the tree's state is "good".
	passIfGood := Check{Name: "sh", Command: []string{"sh", "-c", `test "$(cat state)" = good`}, Tests: true}
	e2e := Check{Name: "e2e", Command: []string{"sh", "-c", "exit 1"}, E2E: true}
	// timesOutUnlessGood fails as go test does when its -timeout passes,
	// unless the tree's state is "good".
	timesOutUnlessGood := Check{Name: "go test", Command: []string{"sh", "-c", `test "$(cat state)" = good || { echo "panic: test timed out after 3m0s"; exit 1; }`}, Tests: true}
	// diskFullUnlessGood fails as the go command does on a full disk.
	diskFullUnlessGood := Check{Name: "go vet", Command: []string{"sh", "-c", `test "$(cat state)" = good || { echo "write /tmp/go-build1/b1/vet.cfg: no space left on device"; exit 1; }`}, Tests: true}
	prs := []*PullRequest{
		{Name: "passes", Upstream: "example.com/a", Base: "main", Presubmit: []Check{passIfGood, e2e}, kind: fakeKind{with: "good"}},
		{Name: "fails", Upstream: "example.com/a", Base: "main", Presubmit: []Check{passIfGood}, kind: fakeKind{with: "bad"}},
		{Name: "fix", Upstream: "example.com/b", Base: "v1", Fix: true, Presubmit: []Check{passIfGood}, kind: fakeKind{with: "good", without: "bad"}},
		{Name: "fix-green-without", Upstream: "example.com/b", Base: "v1", Fix: true, Presubmit: []Check{passIfGood}, kind: fakeKind{with: "good", without: "good"}},
		{Name: "times-out", Upstream: "example.com/c", Base: "v2", Presubmit: []Check{timesOutUnlessGood}, kind: fakeKind{with: "slow"}},
		{Name: "fix-times-out-without", Upstream: "example.com/c", Base: "v2", Fix: true, Presubmit: []Check{timesOutUnlessGood}, kind: fakeKind{with: "good", without: "slow"}},
		{Name: "disk-full", Upstream: "example.com/d", Base: "v3", Presubmit: []Check{diskFullUnlessGood}, kind: fakeKind{with: "full"}},
		{Name: "fix-disk-full-without", Upstream: "example.com/d", Base: "v3", Fix: true, Presubmit: []Check{diskFullUnlessGood}, kind: fakeKind{with: "good", without: "full"}},
	}
	for _, tc := range []struct {
		only []string
		ok   bool
		// rows are the table's rows without the time column.
		rows []string
	}{
		{nil, false, []string{
			"passes example.com/a main yes green (e2e not run) n/a",
			"fails example.com/a main yes red (sh) n/a",
			"fix example.com/b v1 yes green yes",
			"fix-green-without example.com/b v1 yes green no",
			"times-out example.com/c v2 yes red (go test, timed out) n/a",
			"fix-times-out-without example.com/c v2 yes green timed out",
			"disk-full example.com/d v3 yes red (go vet, out of disk) n/a",
			"fix-disk-full-without example.com/d v3 yes green out of disk",
		}},
		{[]string{"fix-disk-full-without"}, false, []string{"fix-disk-full-without example.com/d v3 yes green out of disk"}},
		{[]string{"fix-times-out-without"}, false, []string{"fix-times-out-without example.com/c v2 yes green timed out"}},
		{[]string{"passes", "fix"}, true, []string{
			"passes example.com/a main yes green (e2e not run) n/a",
			"fix example.com/b v1 yes green yes",
		}},
		{[]string{"fix-green-without"}, false, []string{"fix-green-without example.com/b v1 yes green no"}},
	} {
		report, err := Presubmit(context.Background(), PresubmitOptions{PullRequests: prs, Only: tc.only})
		if err != nil {
			t.Fatal(err)
		}
		if report.OK() != tc.ok {
			t.Errorf("--only %q: OK = %v, want %v", tc.only, report.OK(), tc.ok)
		}
		var table bytes.Buffer
		report.WriteTable(&table)
		lines := strings.Split(table.String(), "\n")
		if !strings.HasPrefix(lines[0], "PULL REQUEST") || len(lines) < len(tc.rows)+1 {
			t.Fatalf("--only %q: table:\n%s", tc.only, table.String())
		}
		for i, want := range tc.rows {
			fields := strings.Fields(lines[i+1])
			if got := strings.Join(fields[:len(fields)-1], " "); got != want {
				t.Errorf("--only %q: row %d = %q, want %q", tc.only, i, got, want)
			}
		}
	}
	if _, err := Presubmit(context.Background(), PresubmitOptions{PullRequests: prs, Only: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "--only nope: no such pull request") {
		t.Errorf("--only nope: %v", err)
	}
}

// TestExportPresubmitReport: a pull request whose presubmit is red in the
// report stops the export, naming it and the check; with --allow-red it is
// exported and its text says so, and only its text.
func TestExportPresubmitReport(t *testing.T) {
	root := stagingFixture(t)
	addKCPPRs(t, root, "1-pin-bump")
	red := PullRequestResult{Name: "kcp-dev-kcp/1-pin-bump", Applies: "yes", RedWithout: "n/a", Checks: []CheckResult{
		{Check: Check{Name: "go vet", Command: []string{"go", "vet", "./test/e2e/conformance/"}}, Status: Red},
	}}
	green := PullRequestResult{Name: ForkFixName, Applies: "yes", RedWithout: "yes", Checks: []CheckResult{
		{Check: Check{Name: "go test -race", Command: []string{"go", "test"}}, Status: Green},
	}}
	data, err := json.Marshal(PresubmitReport{PullRequests: []PullRequestResult{green, red}})
	if err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "presubmit.json")
	testfs.Write(t, report, string(data))
	opts := Options{Author: submitter, BaseBranch: testBranch, Root: root, NoVerify: true, PresubmitReport: report}

	opts.OutDir = filepath.Join(t.TempDir(), "refused")
	_, err = Run(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "kcp-dev-kcp/1-pin-bump: its presubmit is red in "+report+": the check `go vet ./test/e2e/conformance/` is red") {
		t.Fatalf("a red presubmit without --allow-red: %v", err)
	}
	if _, err := os.Stat(opts.OutDir); !os.IsNotExist(err) {
		t.Errorf("the refused export wrote %s: %v", opts.OutDir, err)
	}

	opts.OutDir, opts.AllowRed = filepath.Join(t.TempDir(), "allowed"), true
	res, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	exportedContains(t, opts.OutDir, "kcp-dev-kcp/1-pin-bump/PR.md", "**Not ready to merge.** On its base, the check `go vet ./test/e2e/conformance/` is red")
	for _, line := range strings.Split(testfs.Read(t, filepath.Join(opts.OutDir, "kcp-dev-kcp/1-pin-bump/PR.md")), "\n") {
		// The text stands alone: the note names the check, not our tool or flag.
		if strings.Contains(line, "Not ready to merge") && (strings.Contains(line, "carry") || strings.Contains(line, "allow-red")) {
			t.Errorf("the red note names this project's tool: %q", line)
		}
	}
	if text := testfs.Read(t, filepath.Join(opts.OutDir, PRFile)); strings.Contains(text, "Not ready to merge") {
		t.Errorf("the fix's text, green in the report, says its presubmit is red")
	}
	var names []string
	for _, pr := range res.PullRequests {
		names = append(names, pr.Name+" "+pr.Presubmit())
	}
	if want := []string{ForkFixName + " green", "kcp-dev-kcp/1-pin-bump red (go vet)"}; !slices.Equal(names, want) {
		t.Errorf("Result.PullRequests = %q, want %q", names, want)
	}
}

// TestRunCheckEnvironment: a check sees PWD as its own directory, as after
// a shell's cd (kcp's Makefile puts its test server's files in $(PWD)), and
// not the caller's GOFLAGS or CGO_ENABLED (make test's cgo off failed kcp's
// e2e target, which runs go test -race).
func TestRunCheckEnvironment(t *testing.T) {
	t.Setenv("GOFLAGS", "-trimpath")
	t.Setenv("CGO_ENABLED", "0")
	tree := t.TempDir()
	if err := os.Mkdir(filepath.Join(tree, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(tree, "sub")
	// awk, not sh: sh resets a PWD that is not its directory; make does not.
	c := Check{Name: "env", Dir: "sub", Command: []string{"awk", `BEGIN {
		if (ENVIRON["PWD"] != "` + want + `") { print "PWD=" ENVIRON["PWD"]; exit 1 }
		if ("GOFLAGS" in ENVIRON || "CGO_ENABLED" in ENVIRON) { print "GOFLAGS=" ENVIRON["GOFLAGS"] " CGO_ENABLED=" ENVIRON["CGO_ENABLED"]; exit 1 }
	}`}}
	if r := runCheck(context.Background(), c, tree); r.Status != Green {
		t.Errorf("runCheck in %s: %s %q", want, r.Status, r.Excerpt)
	}
}

// TestKCPE2ECheckThroughMake: each e2e check's make command, through a
// recipe that expands TEST_ARGS as kcp's test-e2e-shared-minimal does
// (unquoted, in bash), hands go test the pattern whole. Unquoted, bash
// stopped at the pattern's "(" and make ate its "$".
func TestKCPE2ECheckThroughMake(t *testing.T) {
	testfs.NeedCommands(t, "go", "make", "bash")
	prs := repoPullRequests(t)
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "Makefile"), "SHELL := /usr/bin/env bash -e\n"+KCPE2ETarget+":\n\t@printf '%s\\n' $(WHAT) $(TEST_ARGS) > args\n")
	seen := 0
	for _, pr := range prs {
		for _, c := range pr.Presubmit {
			if !c.E2E {
				continue
			}
			seen++
			cmd := exec.Command(c.Command[0], c.Command[1:]...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %s: %v\n%s", pr.Name, c, err, out)
			}
			args := strings.Fields(testfs.Read(t, filepath.Join(dir, "args")))
			if len(args) != 5 || args[1] != "-run" || args[3] != "-timeout" {
				t.Fatalf("%s: go test would get %q", pr.Name, args)
			}
			re, err := regexp.Compile(args[2])
			if err != nil {
				t.Fatalf("%s: -run %q: %v", pr.Name, args[2], err)
			}
			names := e2eTests(pr.Patches)[strings.Trim(strings.TrimPrefix(args[0], "./"), "/")]
			if len(names) == 0 {
				t.Errorf("%s: no tests of its own in %s", pr.Name, args[0])
			}
			for _, name := range names {
				if !re.MatchString(name) || re.MatchString(name+"X") || re.MatchString("X"+name) {
					t.Errorf("%s: -run %q does not match exactly %s", pr.Name, args[2], name)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no e2e check in the list")
	}
}

// repoPullRequests is this repository's list of pull requests.
func repoPullRequests(t *testing.T) []*PullRequest {
	t.Helper()
	c, err := carryset.Load(testfs.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	prs, err := PullRequests(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return prs
}
