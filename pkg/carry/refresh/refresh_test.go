package refresh

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAppendToSeries(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "series")
	if err := os.WriteFile(path, []byte("# carry\n0001-a.patch"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := appendToSeries(dir, "0002-b.patch"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "# carry\n0001-a.patch\n0002-b.patch\n" {
		t.Errorf("series = %q", data)
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
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
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
	if data, err := os.ReadFile(filepath.Join(dst, "new", "y.go")); err != nil || string(data) != "new" {
		t.Errorf("new/y.go = %q, %v", data, err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "run.sh")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("executable bit lost: %v, %v", fi.Mode(), err)
	}
}
