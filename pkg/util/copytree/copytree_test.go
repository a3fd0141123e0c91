package copytree

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCopy(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "dst")
	for name, perm := range map[string]os.FileMode{"a/x.go": 0o444, "run.sh": 0o755, ".git/HEAD": 0o644} {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), perm); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a/x.go", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}

	skipGit := func(rel string) (bool, error) { return rel == ".git", nil }
	if err := Copy(src, dst, Options{Skip: skipGit, Symlinks: true}); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dst, "a", "x.go")); err != nil || string(data) != "a/x.go" {
		t.Errorf("a/x.go = %q, %v", data, err)
	}
	for name, want := range map[string]os.FileMode{"a/x.go": 0o444, "run.sh": 0o755} {
		if fi, err := os.Stat(filepath.Join(dst, filepath.FromSlash(name))); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", name, fi.Mode(), err, want)
		}
	}
	if link, err := os.Readlink(filepath.Join(dst, "link")); err != nil || link != "a/x.go" {
		t.Errorf("link = %q, %v", link, err)
	}
	if _, err := os.Stat(filepath.Join(dst, ".git")); !os.IsNotExist(err) {
		t.Errorf("skipped .git copied: %v", err)
	}

	writable := filepath.Join(t.TempDir(), "w")
	err := Copy(src, writable, Options{Skip: skipGit, Writable: true})
	var unsupported *UnsupportedError
	if !errors.As(err, &unsupported) || unsupported.Path != filepath.Join(src, "link") {
		t.Fatalf("a symlink without Symlinks: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(writable, "a", "x.go")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("Writable: a/x.go mode %v, %v", fi.Mode(), err)
	}

	stop := errors.New("stop")
	if err := Copy(src, t.TempDir(), Options{Skip: func(string) (bool, error) { return false, stop }}); !errors.Is(err, stop) {
		t.Errorf("Skip's error: %v", err)
	}
}
