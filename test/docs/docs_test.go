package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

// pages are the pages a reader follows: the README, CONTRIBUTING.md and docs/.
func pages(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v (%d pages)", err, len(docs))
	}
	rels := []string{"README.md", "CONTRIBUTING.md"}
	for _, d := range docs {
		rels = append(rels, "docs/"+filepath.Base(d))
	}
	return rels
}

func makeTargets(t *testing.T, root string) []string {
	t.Helper()
	targets := MakefileTargets(testfs.Read(t, filepath.Join(root, "Makefile")))
	if !slices.Contains(targets, "test") || !slices.Contains(targets, "all") {
		t.Fatalf("Makefile: targets %q lack test or all; the parser lost track of it", targets)
	}
	return targets
}

// kcpMakeTargets are kcp's own make targets the pages name, where they
// describe kcp's CI. Each must be a rule that kcp-patches/ adds to kcp's
// Makefile or, with KCP_SOURCE, one of that tree's Makefile.
func kcpMakeTargets(t *testing.T, root string) []string {
	t.Helper()
	named := []string{"test-integration", "test-e2e-shared-minimal-race"}
	patches, err := filepath.Glob(filepath.Join(root, "kcp-patches", "*", "*.patch"))
	if err != nil || len(patches) == 0 {
		t.Fatalf("kcp-patches/*/*.patch: %v (%d patches)", err, len(patches))
	}
	var defined []string
	for _, p := range patches {
		defined = append(defined, MakefileTargets(addedToMakefile(testfs.Read(t, p)))...)
	}
	kcpSource := os.Getenv("KCP_SOURCE")
	if kcpSource != "" {
		defined = append(defined, MakefileTargets(testfs.Read(t, filepath.Join(kcpSource, "Makefile")))...)
	}
	for _, target := range named {
		if slices.Contains(defined, target) {
			continue
		}
		if kcpSource == "" {
			t.Logf("make %s: not added by kcp-patches/; kcp's own Makefile is not checked without KCP_SOURCE", target)
		} else {
			t.Errorf("make %s: the pages name it as kcp's, but neither kcp-patches/ nor %s/Makefile defines it", target, kcpSource)
		}
	}
	return named
}

// addedToMakefile is the lines a patch adds to a file named Makefile.
func addedToMakefile(patch string) string {
	var added []string
	inMakefile := false
	for _, line := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(line, "+++ "):
			inMakefile = filepath.Base(strings.TrimPrefix(line, "+++ ")) == "Makefile"
		case inMakefile && strings.HasPrefix(line, "+"):
			added = append(added, line[1:])
		}
	}
	return strings.Join(added, "\n")
}

// carryCommands builds carry as the Makefile's carry target does (without
// the workspace, which points into .overlay/) and reads its --help: the
// command tree is package main's, which a test cannot import.
func carryCommands(t *testing.T, root string) []string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "carry")
	build := exec.Command("go", "build", "-o", bin, "./cmd/carry")
	build.Dir = root
	build.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/carry: %v\n%s", err, out)
	}
	help, err := exec.Command(bin, "--help").Output()
	if err != nil {
		t.Fatalf("carry --help: %v", err)
	}
	commands := CarryHelpCommands(string(help))
	if !slices.Contains(commands, "scrub") {
		t.Fatalf("carry --help: commands %q lack scrub; the parser lost track of it:\n%s", commands, help)
	}
	return commands
}

// TestDocsNameWhatExists: every relative link in the pages resolves (the
// file, and its #anchor to a heading there), every `make <target>` they
// name is a Makefile target, every `carry <command>` a command of carry.
func TestDocsNameWhatExists(t *testing.T) {
	root := testfs.RepoRoot(t)
	targets := append(makeTargets(t, root), kcpMakeTargets(t, root)...)
	checker := NewChecker(root, targets, carryCommands(t, root))
	for _, page := range pages(t, root) {
		problems, err := checker.Check(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
	}
	// Not vacuous: the pages link to each other and name targets and commands throughout.
	n := checker.Counts
	if n.Links < 30 || n.Anchors < 5 || n.MakeTargets < 30 || n.CarryCommands < 30 {
		t.Errorf("checked %+v; the parser lost track of the pages", n)
	}
	t.Logf("checked %d relative links (%d with anchors), %d make targets and %d carry commands named", n.Links, n.Anchors, n.MakeTargets, n.CarryCommands)
}

// TestCITableHasEveryMakeTarget: docs/ci.md's table names every target of
// the Makefile (`make` for all), each with how long it takes.
func TestCITableHasEveryMakeTarget(t *testing.T) {
	root := testfs.RepoRoot(t)
	page := testfs.Read(t, filepath.Join(root, "docs", "ci.md"))
	for _, p := range TargetsTableProblems(page, makeTargets(t, root)) {
		t.Error("docs/ci.md: " + p)
	}
}

// TestREADMEFirstScreen: the README stays short, and its set-up section
// names two commands, `make` and `make test`.
func TestREADMEFirstScreen(t *testing.T) {
	readme := testfs.Read(t, filepath.Join(testfs.RepoRoot(t), "README.md"))
	for _, p := range READMEProblems(readme) {
		t.Error("README.md: " + p)
	}
}
