// Package modules checks the repository's module requirements against kcp's.
package modules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

// TestSharedModulesMatchKCP: every module kcp v0.32.3's go.mod requires and
// this repository selects is selected at kcp's version (after kcp's
// replacements). The build cache keys a compiled package by its dependencies'
// output, so one module at another version (a newer golang.org/x/sys, say)
// makes everything above it compile twice: once for carry build's kcp, once
// for the suite and its test shards. `make test` relies on the sharing
// (docs/ci.md); a `go get -u` that breaks it fails here, naming the modules.
func TestSharedModulesMatchKCP(t *testing.T) {
	root := testfs.RepoRoot(t)
	selected := goListModules(t, root)
	kcp, ok := selected["github.com/kcp-dev/kcp"]
	if !ok {
		t.Fatal("go.mod does not require github.com/kcp-dev/kcp")
	}
	kcpGoMod := goModOf(t, root, "github.com/kcp-dev/kcp@"+kcp)
	data, err := os.ReadFile(kcpGoMod)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(kcpGoMod, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	replaced := map[string]string{} // module -> version, or "" for a directory
	for _, r := range f.Replace {
		replaced[r.Old.Path] = r.New.Version
	}
	var wrong []string
	compared := 0
	for _, r := range f.Require {
		want := r.Mod.Version
		if v, ok := replaced[r.Mod.Path]; ok {
			if v == "" {
				continue // kcp's own staging modules, replaced by directories
			}
			want = v
		}
		got, ok := selected[r.Mod.Path]
		if !ok {
			continue
		}
		compared++
		if got == want {
			continue
		}
		wrong = append(wrong, fmt.Sprintf("%s %s (kcp %s: %s)", r.Mod.Path, got, kcp, want))
	}
	sort.Strings(wrong)
	if len(wrong) > 0 {
		t.Errorf("go.mod selects %d modules at other versions than kcp %s's go.mod; `go get` them at kcp's versions (and downgrade what requires more):\n  %s",
			len(wrong), kcp, strings.Join(wrong, "\n  "))
	}
	if compared < 100 {
		t.Errorf("compared %d modules with kcp's go.mod, expected hundreds: is %s kcp's go.mod?", compared, kcpGoMod)
	}
	t.Logf("%d modules kcp %s requires: at kcp's versions", compared, kcp)
}

// goListModules is the repository's build list without the workspace (the
// overlay only replaces fork modules by directories): module -> selected
// version, after go.mod's replacements.
func goListModules(t *testing.T, root string) map[string]string {
	t.Helper()
	out := goCmd(t, root, "list", "-m", "-json", "all")
	mods := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var m struct {
			Path, Version string
			Replace       *struct{ Path, Version string }
		}
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("go list -m -json all: %v", err)
		}
		v := m.Version
		if m.Replace != nil {
			v = m.Replace.Version
		}
		mods[m.Path] = v
	}
	return mods
}

// goModOf is the module cache's copy of a module version's go.mod.
func goModOf(t *testing.T, root, modVersion string) string {
	t.Helper()
	var m struct{ GoMod, Error string }
	if err := json.Unmarshal(goCmd(t, root, "mod", "download", "-json", modVersion), &m); err != nil {
		t.Fatalf("go mod download -json %s: %v", modVersion, err)
	}
	if m.Error != "" || m.GoMod == "" {
		t.Fatalf("go mod download -json %s: %q", modVersion, m.Error)
	}
	return m.GoMod
}

func goCmd(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}
