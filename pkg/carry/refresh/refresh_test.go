package refresh

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

func TestAppendToSeries(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "series")
	testfs.Write(t, path, "# carry\n0001-a.patch")
	if err := appendToSeries(dir, "0002-b.patch"); err != nil {
		t.Fatal(err)
	}
	if got := testfs.Read(t, path); got != "# carry\n0001-a.patch\n0002-b.patch\n" {
		t.Errorf("series = %q", got)
	}
}

func TestReplaceTree(t *testing.T) {
	dst, src := t.TempDir(), t.TempDir()
	for path, content := range map[string]string{
		filepath.Join(dst, ".git", "HEAD"): "ref",
		filepath.Join(dst, "old", "x.go"):  "old",
		filepath.Join(src, "new", "y.go"):  "new",
		filepath.Join(src, "run.sh"):       "#!/bin/sh\n",
	} {
		testfs.Write(t, path, content)
	}
	if err := os.Chmod(filepath.Join(src, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := replaceTree(dst, src); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, "old")); !os.IsNotExist(err) {
		t.Errorf("old files kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dst, ".git", "HEAD")); err != nil {
		t.Errorf(".git removed: %v", err)
	}
	if got := testfs.Read(t, filepath.Join(dst, "new", "y.go")); got != "new" {
		t.Errorf("new/y.go = %q", got)
	}
	if fi, err := os.Stat(filepath.Join(dst, "run.sh")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("executable bit lost: %v, %v", fi.Mode(), err)
	}
}
