// Package testproxy serves synthetic module versions to the go command in
// tests through go-internal's goproxytest, so that nothing leaves the test's
// directory. What it adds to goproxytest: module trees copied into its
// layout as a module zip holds them (without nested modules), the h1: hash
// of each for go.sum, and the go command's environment for a test.
package testproxy

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/goproxytest"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
)

// Add copies the module tree in dir into proxyDir as m, leaving out
// subdirectories that hold their own go.mod (a module zip does not contain
// them), and returns the h1: hash of the zip the proxy serves (the go.sum
// line's hash). info, when not nil, is served as the .info (for Origin
// data); otherwise goproxytest makes one up.
func Add(proxyDir string, m module.Version, dir string, info []byte) (string, error) {
	archive, err := archiveDir(proxyDir, m)
	if err != nil {
		return "", err
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(rel, ".") {
			return fmt.Errorf("%s: goproxytest does not serve files whose names start with a dot", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return writeFile(filepath.Join(archive, rel), data)
	})
	if err != nil {
		return "", fmt.Errorf("serving %s as %s: %w", dir, m, err)
	}
	if info != nil {
		if err := writeFile(filepath.Join(archive, ".info"), info); err != nil {
			return "", err
		}
	}
	prefix := m.Path + "@" + m.Version + "/"
	zipNames := make([]string, len(files))
	for i, f := range files {
		zipNames[i] = prefix + f
	}
	return dirhash.Hash1(zipNames, func(name string) (io.ReadCloser, error) {
		return os.Open(filepath.Join(archive, filepath.FromSlash(strings.TrimPrefix(name, prefix))))
	})
}

// archiveDir is where goproxytest looks for m's files: a directory named
// after the escaped path and version, with the path's slashes as
// underscores (so a module path with an underscore cannot be served).
func archiveDir(proxyDir string, m module.Version) (string, error) {
	if strings.Contains(m.Path, "_") {
		return "", fmt.Errorf("%s: goproxytest cannot serve a module path with an underscore", m.Path)
	}
	ep, err := module.EscapePath(m.Path)
	if err != nil {
		return "", err
	}
	ev, err := module.EscapeVersion(m.Version)
	if err != nil {
		return "", err
	}
	return filepath.Join(proxyDir, strings.ReplaceAll(ep, "/", "_")+"_"+ev), nil
}

func writeFile(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

// Serve starts goproxytest on proxyDir, which must already hold every
// module (it reads the list once), until the test ends, and points the go
// command at it with a module cache in modCache and no checksum database.
func Serve(t testing.TB, proxyDir, modCache string) {
	t.Helper()
	srv := goproxytest.NewTestServer(t, proxyDir, "")
	for k, v := range map[string]string{
		"GOPROXY":     srv.URL,
		"GOMODCACHE":  modCache,
		"GOFLAGS":     "-modcacherw",
		"GOSUMDB":     "off",
		"GONOSUMDB":   "*",
		"GOTOOLCHAIN": "local",
	} {
		t.Setenv(k, v)
	}
}
