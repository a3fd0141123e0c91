package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcppatches"
)

// e2eVetTimeout bounds `go vet ./test/e2e/...` in a kcp tree: cold, it
// compiles what kcp's e2e packages import, most of kcp and the fork.
const e2eVetTimeout = 45 * time.Minute

// TestRealKCPE2EVet: kcp's e2e tests compile and pass `go vet
// ./test/e2e/...` on KCP_SOURCE with every pull request of kcp-patches/
// applied in merge order (git am, each in the form that applies to the
// tree), with the tree's own go.mod (GOWORK=off: the fork at kcp's pin, as
// kcp's CI builds them). The pull requests change kcp's e2e tests (the pin
// bump's test, the race target's concurrent LISTs) and the packages those
// import, so the series must leave them compiling. It is not vacuous: a
// form of every pull request must have applied, and `go list` must find the
// packages whose tests they change among those vetted. `make
// test-kcp-main` runs it on kcp main; `make test` does not (a cold vet
// compiles most of kcp: docs/ci.md).
func TestRealKCPE2EVet(t *testing.T) {
	src := kcpSource(t, "kcp's e2e tests are vetted in a kcp source tree: set "+EnvKCPSource)
	testfs.NeedCommands(t, "git", "go")
	root := testfs.RepoRoot(t)
	prs, err := kcppatches.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e2eVetTimeout)
	defer cancel()
	// A fixed directory per tree, as kcp-e2e's: kcp's own packages are
	// compiled (and cached) by their directory unless -trimpath is set.
	tree := filepath.Join(root, ".build", "kcp-e2e-vet", filepath.Base(filepath.Clean(src)), "src")
	forms, err := kcppatches.ApplyToCopyForms(ctx, src, tree, prs)
	if err != nil {
		t.Fatal(err)
	}
	// One form of each pull request applied (git am, in merge order).
	if len(forms) != len(prs) {
		t.Fatalf("%d forms applied for %d pull requests", len(forms), len(prs))
	}
	var applied []string
	for _, form := range forms {
		rel, _ := filepath.Rel(filepath.Join(root, kcppatches.Dir), form.Dir)
		applied = append(applied, filepath.ToSlash(rel))
	}

	// The e2e packages whose tests the series changes must be among those
	// vetted.
	listed := goIn(ctx, t, tree, "list", "./test/e2e/...")
	pkgs := strings.Fields(listed)
	var changed []string
	for _, form := range forms {
		for _, p := range form.Patches {
			for _, f := range p.Files {
				if name := f.NewName; strings.HasPrefix(name, "test/e2e/") && strings.HasSuffix(name, "_test.go") {
					changed = append(changed, filepath.ToSlash(filepath.Dir(name)))
				}
			}
		}
	}
	if len(changed) == 0 {
		t.Fatalf("no pull request of %s changes a test under test/e2e: nothing of the series to vet", kcppatches.Dir)
	}
	for _, dir := range changed {
		if !slices.ContainsFunc(pkgs, func(p string) bool { return strings.HasSuffix(p, "/"+dir) }) {
			t.Errorf("go list ./test/e2e/... in %s does not list %s, whose tests the series changes", tree, dir)
		}
	}

	began := time.Now()
	goIn(ctx, t, tree, "vet", "./test/e2e/...")
	t.Logf("%s with %s applied: go vet ./test/e2e/... passed, %d packages, in %s", src, strings.Join(applied, ", "), len(pkgs), time.Since(began).Round(time.Second))
}

// goIn runs the go command in the kcp tree with its own go.mod (GOWORK=off)
// and cgo off, as kcp builds, and fails the test with its output if it
// fails; it returns its standard output.
func goIn(ctx context.Context, t *testing.T, tree string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = tree
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	cmd.WaitDelay = 10 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), tree, err, tailLines(stderr.String(), 60))
	}
	return string(out)
}
