// Package testfs holds the file helpers the repository's tests share.
package testfs

import (
	"os"
	"path/filepath"
	"testing"
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
