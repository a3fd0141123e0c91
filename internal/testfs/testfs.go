// Package testfs holds the file and text helpers the repository's tests
// share.
package testfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/pkg/util/reporoot"
)

// Write writes content to path, creating its directory, or fails the test.
func Write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// WriteTree writes files (slash-separated paths relative to dir) under dir.
func WriteTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		Write(t, filepath.Join(dir, filepath.FromSlash(name)), content)
	}
}

// Read returns the content of path, or fails the test.
func Read(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// ReadTree returns every file under dir, by slash-separated path relative
// to dir, or fails the test.
func ReadTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// ContainsAll reports, as test errors, each of wants that text (named by
// what, for the message) lacks.
func ContainsAll(t testing.TB, what, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, text)
		}
	}
}

// RepoRoot is the kcp-carry checkout the test runs in, or fails the test.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := reporoot.Find(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// NeedCommands skips the test unless every named command is on PATH.
func NeedCommands(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			t.Skipf("%s not installed", name)
		}
	}
}
