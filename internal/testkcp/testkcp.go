// Package testkcp makes the synthetic kcp checkout that tests build instead
// of kcp: test/testdata/kcp-checkout.txtar plus the repository's fork pins,
// go.sum and git history tagged v0.99.0.
package testkcp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	"golang.org/x/mod/modfile"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/gowork"
)

// Version is the tag of the synthetic checkout's commit.
const Version = "v0.99.0"

// Checkout writes the synthetic checkout, plus extra files (slash paths
// relative to the checkout, e.g. more cmd/ packages), into a temporary
// directory, tidies it against root's go.mod pins and module versions and
// commits it as Version.
func Checkout(t testing.TB, root string, extra map[string]string) string {
	t.Helper()
	ar, err := txtar.ParseFile(filepath.Join(root, "test", "testdata", "kcp-checkout.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Cleanup(func() { removeWorkspaces(t, root, dir) })
	files := map[string]string{}
	for _, f := range ar.Files {
		files[f.Name] = string(f.Data)
	}
	for name, content := range extra {
		files[name] = content
	}
	testfs.WriteTree(t, dir, files)

	rootGoMod := filepath.Join(root, "go.mod")
	rootMod, err := modfile.Parse(rootGoMod, []byte(testfs.Read(t, rootGoMod)), nil)
	if err != nil {
		t.Fatal(err)
	}
	goModPath := filepath.Join(dir, "go.mod")
	f, err := modfile.Parse(goModPath, []byte(testfs.Read(t, goModPath)), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The repository's versions of every module it shares with the
	// checkout (tidy keeps a requirement it can use and drops the rest), so
	// that the checkout's builds find its packages in the build cache the
	// suite filled, instead of compiling the fork's older golang.org/x/* and
	// everything above them again.
	for _, r := range rootMod.Require {
		if err := f.AddRequire(r.Mod.Path, r.Mod.Version); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rootMod.Replace {
		if strings.HasPrefix(r.Old.Path, "k8s.io/") {
			if err := f.AddReplace(r.Old.Path, r.Old.Version, r.New.Path, r.New.Version); err != nil {
				t.Fatal(err)
			}
		}
	}
	data, err := f.Format()
	if err != nil {
		t.Fatal(err)
	}
	testfs.WriteTree(t, dir, map[string]string{
		"go.mod": string(data),
		"go.sum": testfs.Read(t, filepath.Join(root, "go.sum")),
	})
	GoCommand(t, dir, []string{"GOWORK=off", "GOFLAGS=-mod=mod"}, "mod", "tidy")

	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=carry test", "-c", "user.email=carry@example.invalid", "commit", "-q", "-m", "synthetic kcp"},
		{"tag", Version},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// removeWorkspaces removes what builds of the checkout at dir generated
// under root/.build (kcpbuild's source mode: a go.work that uses dir, with
// an overlay beside it), which would outlive the checkout.
func removeWorkspaces(t testing.TB, root, dir string) {
	works, err := filepath.Glob(filepath.Join(root, ".build", "*", "go.work"))
	if err != nil {
		t.Error(err)
		return
	}
	for _, path := range works {
		w, err := gowork.Read(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if w.Uses(dir) {
			if err := os.RemoveAll(filepath.Dir(path)); err != nil {
				t.Error(err)
			}
		}
	}
}

// GoCommand runs the go command in dir with env added, or fails the test.
func GoCommand(t testing.TB, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v in %s: %v\n%s", args, dir, err, out)
	}
}
