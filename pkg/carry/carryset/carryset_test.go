package carryset

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

func TestCarriedModules(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "k8s.io/apiserver/series"), "")
	testfs.Write(t, filepath.Join(dir, "k8s.io/apimachinery/series"), "")
	testfs.Write(t, filepath.Join(dir, "k8s.io/apimachinery/README"), "")
	testfs.Write(t, filepath.Join(dir, "notes/README"), "")
	mods, err := CarriedModules(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(mods, ",") != "k8s.io/apimachinery,k8s.io/apiserver" {
		t.Errorf("CarriedModules = %v", mods)
	}

	testfs.Write(t, filepath.Join(dir, "k8s.io/apiserver/sub/series"), "")
	if _, err := CarriedModules(dir); err == nil || !strings.Contains(err.Error(), "carries both k8s.io/apiserver and the nested module k8s.io/apiserver/sub") {
		t.Errorf("nested modules: %v", err)
	}

	bad := t.TempDir()
	testfs.Write(t, filepath.Join(bad, "Not A Module/series"), "")
	if _, err := CarriedModules(bad); err == nil || !strings.Contains(err.Error(), "does not name a module path") {
		t.Errorf("bad module path: %v", err)
	}
}

// TestLoadWithoutGoSum: pins and series load without go.sum (carry pins
// --kcp-source needs no zip), but a step that fetches a fork zip is refused
// with go.sum named; the id changes with the series and an empty carry has none.
func TestLoadWithoutGoSum(t *testing.T) {
	root := t.TempDir()
	testfs.Write(t, filepath.Join(root, "go.mod"), "module example.com/repo\n\ngo 1.22\n\nreplace example.com/lib => example.com/fork/lib v0.0.0-20260101000000-aaaaaaaaaaaa\n")
	testfs.Write(t, filepath.Join(root, patchesDirName, "example.com/lib/series"), "")
	c, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Forks()["example.com/lib"].Version; got != "v0.0.0-20260101000000-aaaaaaaaaaaa" {
		t.Errorf("fork = %q", got)
	}
	if err := c.CheckZipHashes(); err == nil || !strings.Contains(err.Error(), "go.sum") {
		t.Errorf("CheckZipHashes without go.sum: %v", err)
	}
	id, err := c.ID()
	if err != nil {
		t.Fatal(err)
	}
	testfs.Write(t, filepath.Join(root, patchesDirName, "example.com/lib/series"), "# a comment changes the series\n")
	again, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if id2, err := again.ID(); err != nil || id2 == id {
		t.Errorf("ID after a series change = %q, %v; was %q", id2, err, id)
	}
	empty := &Carry{PatchesDir: filepath.Join(root, patchesDirName)}
	if _, err := empty.ID(); err == nil || !strings.Contains(err.Error(), "no carried modules") {
		t.Errorf("ID of an empty carry: %v", err)
	}
}

// Without takes a patch's file name, the name less .patch, or its number,
// with or without the module path; it refuses what names nothing (listing
// the series) and a number two modules share (asking for the module).
func TestWithout(t *testing.T) {
	c, err := Load(testfs.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	// A patch after its module's first whose number no other module has,
	// so that the bare number names it alone.
	numbers := map[string]int{}
	for _, m := range c.Modules {
		for _, p := range m.Series.Patches {
			numbers[p.Name[:4]]++
		}
	}
	var mod *Carried
	var second string
	for _, m := range c.Modules {
		for _, p := range m.Series.Patches[min(1, len(m.Series.Patches)):] {
			if second == "" && numbers[p.Name[:4]] == 1 {
				mod, second = m, p.Name
			}
		}
	}
	if second == "" {
		t.Skip("no patch after a module's first has a number of its own")
	}
	id, err := c.ID()
	if err != nil {
		t.Fatal(err)
	}
	at := slices.Index(c.Modules, mod)
	for _, spec := range []string{second, strings.TrimSuffix(second, ".patch"), second[:4], strings.TrimLeft(second[:4], "0"), mod.Module + "/" + second[:4]} {
		w, err := c.Without([]string{spec, spec})
		if err != nil {
			t.Errorf("Without(%s) = %v", spec, err)
			continue
		}
		if diff := cmp.Diff([]string{mod.Module + "/" + second}, w.LeftOut); diff != "" {
			t.Errorf("Without(%s) left out (-want +got):\n%s", spec, diff)
		}
		if got := w.LeftOutNumbers(); len(got) != 1 || got[0] != second[:4] {
			t.Errorf("LeftOutNumbers = %v", got)
		}
		if slices.Contains(w.Modules[at].Series.Names(), second) || len(w.Modules[at].Series.Patches) != len(mod.Series.Patches)-1 {
			t.Errorf("Without(%s) series = %v", spec, w.Modules[at].Series.Names())
		}
		if wid, err := w.ID(); err != nil || wid == id {
			t.Errorf("Without(%s).ID() = %q, %v; the whole carry's is %q", spec, wid, err, id)
		}
	}
	if len(c.Modules[at].Series.Patches) != len(mod.Series.Patches) || c.LeftOut != nil {
		t.Errorf("Without changed the carry it was called on")
	}
	for spec, want := range map[string]string{
		"9999":                   "--without 9999: no patch of " + c.PatchesDir + " is named or numbered so; the series: " + c.Modules[0].Module + ": " + c.Modules[0].Series.Names()[0],
		"example.com/other/0001": "--without example.com/other/0001: no patch",
		"nonsense":               "--without nonsense: no patch",
	} {
		if _, err := c.Without([]string{spec}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Without(%s) = %v, want %q", spec, err, want)
		}
	}

	two := *c
	other := *mod
	other.Module = "k8s.io/other"
	two.Modules = []*Carried{&other, mod}
	if _, err := two.Without([]string{"1"}); err == nil || !strings.Contains(err.Error(), "put the module path first (--without k8s.io/other/") {
		t.Errorf("a number two modules share: %v", err)
	}
	if w, err := two.Without([]string{mod.Module + "/1"}); err != nil || len(w.LeftOut) != 1 || !strings.HasPrefix(w.LeftOut[0], mod.Module+"/") {
		t.Errorf("a number after its module: %v, %v", w, err)
	}
}
