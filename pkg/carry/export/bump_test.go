package export

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/util/copytree"
)

// kcpModules are the kcp modules that pin the fork.
var kcpModules = []string{".", "docs/generators/cli-doc", "staging/src/github.com/kcp-dev/virtual-workspace-framework"}

const (
	basePin  = "v0.0.0-20260602065202-e006560fc76a"
	newStamp = "20261201120000-0123456789ab"
)

// A synthetic kcp tree: the script moves every fork replace of the three
// modules, with or without a version on the left, leaves the others alone,
// and refuses a bad V or a tree on another commit without changing it.
func TestBumpForkPin(t *testing.T) {
	testfs.NeedCommands(t, "bash", "go")
	text, err := render("bump-fork-pin.sh.tmpl", prData{BaseRev: "e006560fc76a", BaseStamp: "20260602065202-e006560fc76a"})
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), BumpScript)
	if err := os.WriteFile(script, text, 0o755); err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	for i, m := range kcpModules {
		gomod := "module example.com/kcp" + strings.Repeat("/sub", i) + "\n\ngo 1.22\n\nreplace (\n" +
			"\tk8s.io/api => github.com/kcp-dev/kubernetes/staging/src/k8s.io/api " + basePin + "\n" +
			"\tk8s.io/apiserver v0.36.0 => github.com/kcp-dev/kubernetes/staging/src/k8s.io/apiserver " + basePin + "\n" +
			"\tk8s.io/kubernetes => github.com/kcp-dev/kubernetes v1.37.0-alpha.0.0.20260602065202-e006560fc76a\n" +
			"\texample.com/other => example.com/other v1.0.0\n)\n"
		testfs.Write(t, filepath.Join(tree, m, "go.mod"), gomod)
	}
	checkBumpScript(t, script, tree)
}

// checkBumpScript runs the pin bump script on a copy of the kcp tree src
// with SKIP_TIDY=1: a bad V and, after the bump, a second bump (the tree no
// longer pins the base commit) fail naming the problem and change nothing;
// the bump moves every github.com/kcp-dev/kubernetes replace of the three
// go.mod files, as `go mod edit -json` reads them, to the new commit.
func checkBumpScript(t *testing.T, script, src string) {
	t.Helper()
	tree := filepath.Join(t.TempDir(), "kcp")
	if err := copytree.Copy(src, tree, copytree.Options{Symlinks: true, Skip: func(rel string) (bool, error) { return rel == ".git", nil }}); err != nil {
		t.Fatal(err)
	}
	before := forkReplaces(t, tree)
	for m, reps := range before {
		if len(reps) == 0 {
			t.Fatalf("%s/go.mod: no replace points at github.com/kcp-dev/kubernetes", m)
		}
		for _, r := range reps {
			if !strings.HasSuffix(r.New.Version, "20260602065202-e006560fc76a") {
				t.Fatalf("%s/go.mod: %s does not pin e006560fc76a: not a tree on the carry's base commit", m, r)
			}
		}
	}

	runBump(t, script, tree, "v1.2.3", "is not a fork commit's pseudo-version")
	runBump(t, script, tree, "v0.0.0-20261201120000-0123456789", "is not a fork commit's pseudo-version")
	if diff := cmp.Diff(before, forkReplaces(t, tree)); diff != "" {
		t.Errorf("a bad V changed the tree (-before +after):\n%s", diff)
	}

	out := runBump(t, script, tree, "v0.0.0-"+newStamp, "")
	moved := forkReplaces(t, tree)
	for _, m := range kcpModules {
		if len(moved[m]) != len(before[m]) {
			t.Errorf("%s/go.mod: %d fork replaces, %d before", m, len(moved[m]), len(before[m]))
		}
		for i, r := range moved[m] {
			old := before[m][i]
			if want := strings.TrimSuffix(old.New.Version, "20260602065202-e006560fc76a") + newStamp; r.New.Version != want || r.Old != old.Old || r.New.Path != old.New.Path {
				t.Errorf("%s/go.mod: %s, want %s => %s %s", m, r, old.Old.Path, old.New.Path, want)
			}
			if strings.Contains(r.New.Version, "e006560fc76a") {
				t.Errorf("%s/go.mod: %s still names the old commit", m, r)
			}
		}
		if !strings.Contains(out, m+"/go.mod: "+strconv.Itoa(len(before[m]))+" replaces moved to "+newStamp) {
			t.Errorf("output does not report %s/go.mod:\n%s", m, out)
		}
	}
	if !strings.Contains(out, "SKIP_TIDY=1: not running go mod tidy") {
		t.Errorf("output does not say go mod tidy was skipped:\n%s", out)
	}
	// k8s.io/kubernetes keeps its own pseudo-version form.
	for _, r := range moved["."] {
		if r.Old.Path == "k8s.io/kubernetes" && !strings.HasPrefix(r.New.Version, "v1.37.0-alpha.0.0."+newStamp) {
			t.Errorf("k8s.io/kubernetes => %s", r.New.Version)
		}
	}

	// The tree is on the new commit now, not the carry's base: refused.
	runBump(t, script, tree, "v0.0.0-20261202120000-ba9876543210", "does not pin e006560fc76a")
	if diff := cmp.Diff(moved, forkReplaces(t, tree)); diff != "" {
		t.Errorf("a tree on another commit was changed (-before +after):\n%s", diff)
	}
}

// runBump runs script on tree with SKIP_TIDY=1; a non-empty wantErr is a
// failure whose output must contain it.
func runBump(t *testing.T, script, tree, version, wantErr string) string {
	t.Helper()
	cmd := exec.Command(script, tree, version)
	cmd.Env = append(os.Environ(), "SKIP_TIDY=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	switch {
	case wantErr == "" && err != nil:
		t.Fatalf("%s %s %s: %v\n%s", BumpScript, tree, version, err, out.String())
	case wantErr != "" && (err == nil || !strings.Contains(out.String(), wantErr)):
		t.Errorf("%s %s %s: %v, output:\n%s\nwant a failure saying %q", BumpScript, tree, version, err, out.String(), wantErr)
	}
	return out.String()
}

type modVersion struct{ Path, Version string }

type replace struct{ Old, New modVersion }

func (r replace) String() string {
	return strings.TrimSpace(r.Old.Path+" "+r.Old.Version) + " => " + r.New.Path + " " + r.New.Version
}

// forkReplaces reads the replaces pointing at github.com/kcp-dev/kubernetes
// of the three modules with `go mod edit -json`, by module.
func forkReplaces(t *testing.T, tree string) map[string][]replace {
	t.Helper()
	got := map[string][]replace{}
	for _, m := range kcpModules {
		cmd := exec.Command("go", "mod", "edit", "-json")
		cmd.Dir = filepath.Join(tree, m)
		cmd.Env = append(os.Environ(), "GOWORK=off")
		data, err := cmd.Output()
		if err != nil {
			t.Fatalf("go mod edit -json in %s: %v", cmd.Dir, err)
		}
		var f struct{ Replace []replace }
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("go mod edit -json in %s: %v", cmd.Dir, err)
		}
		got[m] = []replace{}
		for _, r := range f.Replace {
			if r.New.Path == "github.com/kcp-dev/kubernetes" || strings.HasPrefix(r.New.Path, "github.com/kcp-dev/kubernetes/") {
				got[m] = append(got[m], r)
			}
		}
	}
	return got
}
