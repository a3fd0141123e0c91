package reporoot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	root := t.TempDir()
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A quoted module path is the same module.
	write(filepath.Join(root, "go.mod"), "// the repository\nmodule \""+ModulePath+"\"\n\ngo 1.26.0\n")
	// A nested module of another name does not stop the search.
	write(filepath.Join(root, "test", "go.mod"), "module example.com/other\n")
	sub := filepath.Join(root, "test", "e2e")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, start := range []string{root, sub} {
		if got, err := Find(start); err != nil || got != root {
			t.Errorf("Find(%s) = %q, %v; want %q", start, got, err, root)
		}
	}

	t.Chdir(sub)
	if got, err := Find("."); err != nil || got != root {
		t.Errorf("Find(.) in %s = %q, %v; want %q", sub, got, err, root)
	}

	outside := t.TempDir()
	if _, err := Find(outside); err == nil || !strings.Contains(err.Error(), outside) || !strings.Contains(err.Error(), ModulePath) {
		t.Errorf("Find outside the repository: %v", err)
	}
}

// TestFindThisRepository: the tests run inside the checkout.
func TestFindThisRepository(t *testing.T) {
	root, err := Find(".")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "staging-patches")); err != nil {
		t.Errorf("%s is not the repository root: %v", root, err)
	}
}
