package carryset

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

func TestCarriedModules(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "k8s.io/apiserver/series"), "")
	testfs.Write(t, filepath.Join(dir, "k8s.io/apimachinery/series"), "")
	testfs.Write(t, filepath.Join(dir, "k8s.io/apimachinery/README"), "")
	testfs.Write(t, filepath.Join(dir, "notes/README"), "")
	mods, err := CarriedModules(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(mods, ",") != "k8s.io/apimachinery,k8s.io/apiserver" {
		t.Errorf("CarriedModules = %v", mods)
	}

	testfs.Write(t, filepath.Join(dir, "k8s.io/apiserver/sub/series"), "")
	if _, err := CarriedModules(dir); err == nil || !strings.Contains(err.Error(), "carries both k8s.io/apiserver and the nested module k8s.io/apiserver/sub") {
		t.Errorf("nested modules: %v", err)
	}

	bad := t.TempDir()
	testfs.Write(t, filepath.Join(bad, "Not A Module/series"), "")
	if _, err := CarriedModules(bad); err == nil || !strings.Contains(err.Error(), "does not name a module path") {
		t.Errorf("bad module path: %v", err)
	}
}

// TestLoadWithoutGoSum: pins and series load without go.sum (carry pins
// --kcp-source needs no zip), but a step that fetches a fork zip is refused
// with go.sum named; the id changes with the series and an empty carry has none.
func TestLoadWithoutGoSum(t *testing.T) {
	root := t.TempDir()
	testfs.Write(t, filepath.Join(root, "go.mod"), "module example.com/repo\n\ngo 1.22\n\nreplace example.com/lib => example.com/fork/lib v0.0.0-20260101000000-aaaaaaaaaaaa\n")
	testfs.Write(t, filepath.Join(root, patchesDirName, "example.com/lib/series"), "")
	c, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Forks()["example.com/lib"].Version; got != "v0.0.0-20260101000000-aaaaaaaaaaaa" {
		t.Errorf("fork = %q", got)
	}
	if err := c.CheckZipHashes(); err == nil || !strings.Contains(err.Error(), "go.sum") {
		t.Errorf("CheckZipHashes without go.sum: %v", err)
	}
	id, err := c.ID()
	if err != nil {
		t.Fatal(err)
	}
	testfs.Write(t, filepath.Join(root, patchesDirName, "example.com/lib/series"), "# a comment changes the series\n")
	again, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if id2, err := again.ID(); err != nil || id2 == id {
		t.Errorf("ID after a series change = %q, %v; was %q", id2, err, id)
	}
	empty := &Carry{PatchesDir: filepath.Join(root, patchesDirName)}
	if _, err := empty.ID(); err == nil || !strings.Contains(err.Error(), "no carried modules") {
		t.Errorf("ID of an empty carry: %v", err)
	}
}
