package kcpbuild

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestImportedModulesCountsWhatGoBuildCompiles: a module imported only from a
// file go build leaves out on this platform (a _windows.go suffix, a
// //go:build tools or !unix constraint, a test) is not needed to build kcp;
// one imported from a file with the unix tag is.
func TestImportedModulesCountsWhatGoBuildCompiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"main.go":           "package main\n\nimport _ \"example.com/always/pkg\"\n",
		"unix.go":           "//go:build unix\n\npackage main\n\nimport _ \"example.com/unixonly\"\n",
		"notunix.go":        "//go:build !unix\n\npackage main\n\nimport _ \"example.com/notunix\"\n",
		"main_windows.go":   "package main\n\nimport _ \"example.com/windows\"\n",
		"main_test.go":      "package main\n\nimport _ \"example.com/testonly\"\n",
		"hack/tools.go":     "//go:build tools\n\npackage hack\n\nimport _ \"example.com/tools\"\n",
		"testdata/x/x.go":   "package x\n\nimport _ \"example.com/testdata\"\n",
		"pkg/broken/bad.go": "this is not Go",
		"pkg/fine/fine.go":  "package fine\n\nimport _ \"example.com/nested\"\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mods := []string{"example.com/always", "example.com/unixonly", "example.com/notunix", "example.com/windows",
		"example.com/testonly", "example.com/tools", "example.com/testdata", "example.com/nested"}
	got, err := importedModules(dir, mods)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"example.com/always", "example.com/unixonly", "example.com/nested"}
	if !slices.Equal(got, want) {
		t.Errorf("importedModules = %v, want %v", got, want)
	}
}
