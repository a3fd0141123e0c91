// Package testproxy serves synthetic module versions to the go command in
// tests through go-internal's goproxytest, so that nothing leaves the test's
// directory. What it adds to goproxytest: module trees copied into its
// layout as a module zip holds them (without nested modules), the h1: hash
// of each for go.sum, and the go command's environment for a test.
package testproxy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/goproxytest"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/kcp-carry/kcp-carry/pkg/util/copytree"
)

// Add copies the module tree in dir into proxyDir as m, leaving out
// subdirectories that hold their own go.mod (a module zip does not contain
// them), and returns the h1: hash of the zip the proxy serves (the go.sum
// line's hash). goproxytest leaves files whose names start with a dot out
// of the zip, so dir must have none. info, when not nil, is served as the
// .info (for Origin data); otherwise goproxytest makes one up.
func Add(proxyDir string, m module.Version, dir string, info []byte) (string, error) {
	archive, err := archiveDir(proxyDir, m)
	if err != nil {
		return "", err
	}
	nested := func(rel string) (bool, error) {
		_, err := os.Stat(filepath.Join(dir, rel, "go.mod"))
		return err == nil, nil
	}
	if err := copytree.Copy(dir, archive, copytree.Options{Skip: nested}); err != nil {
		return "", fmt.Errorf("serving %s as %s: %w", dir, m, err)
	}
	// Hashed before .info joins the files: the zip holds every other file
	// under <path>@<version>/.
	sum, err := dirhash.HashDir(archive, m.Path+"@"+m.Version, dirhash.Hash1)
	if err != nil {
		return "", err
	}
	if info != nil {
		if err := os.WriteFile(filepath.Join(archive, ".info"), info, 0o644); err != nil {
			return "", err
		}
	}
	return sum, nil
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
