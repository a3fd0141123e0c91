package series

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		// Read-only, like a tree extracted from a module zip.
		if err := os.WriteFile(p, []byte(content), 0o444); err != nil {
			t.Fatal(err)
		}
	}
}

func parse(t *testing.T, data []byte) *Patch {
	t.Helper()
	p, err := ParsePatch("0001-test.patch", data)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var lines = "package a\n\n// 1\n// 2\n// 3\n// 4\n// 5\n// 6\n// 7\n// 8\n// 9\n"

func TestApplyModifyAddDeleteRename(t *testing.T) {
	before := map[string]string{
		"a.go":              lines,
		"gone/old.go":       "package gone\n",
		"moved/from.go":     "package moved\n\nfunc F() {}\n",
		"unchanged/keep.go": "package keep\n",
	}
	after := map[string]string{
		"a.go":              strings.Replace(lines, "// 5\n", "// five\n", 1),
		"added/new_test.go": "package added\n",
		"moved/to.go":       "package moved\n\nfunc F() {}\n",
		"unchanged/keep.go": "package keep\n",
	}
	p := parse(t, gitPatch(t, before, after, carrySubject))
	dir := t.TempDir()
	writeTree(t, dir, before)
	n, err := p.Apply(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("changed %d files, want 4", n)
	}
	got := testfs.ReadTree(t, dir)
	if keys(got) != keys(after) {
		t.Fatalf("files = %s, want %s", keys(got), keys(after))
	}
	for k, v := range after {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "gone")); !os.IsNotExist(err) {
		t.Errorf("emptied directory gone/ still exists (%v)", err)
	}
}

func TestApplyFilter(t *testing.T) {
	before := map[string]string{"a.go": "package a\n", "a_test.go": "package a\n"}
	after := map[string]string{"a.go": "package a\n\nvar X = 1\n", "a_test.go": "package a\n\nvar Y = 2\n", "b_test.go": "package a\n"}
	p := parse(t, gitPatch(t, before, after, carrySubject))
	dir := t.TempDir()
	writeTree(t, dir, before)
	n, err := p.Apply(dir, func(path string) bool { return strings.HasSuffix(path, "_test.go") })
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("changed %d files, want 2", n)
	}
	got := testfs.ReadTree(t, dir)
	if got["a.go"] != before["a.go"] || got["a_test.go"] != after["a_test.go"] || got["b_test.go"] != after["b_test.go"] {
		t.Errorf("tree after filtered apply: %q", got)
	}
}

func TestApplyConflictNamesHunk(t *testing.T) {
	before := map[string]string{"a.go": lines}
	after := map[string]string{"a.go": strings.Replace(lines, "// 8\n", "// eight\n", 1)}
	p := parse(t, gitPatch(t, before, after, carrySubject))
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.go": strings.Replace(lines, "// 7\n", "// seven\n", 1)})
	_, err := p.Apply(dir, nil)
	var ae *ApplyError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v, want *ApplyError", err)
	}
	if ae.File != "a.go" || ae.Hunk != "@@ -7,5 +7,5 @@" || ae.Patch != "0001-test.patch" {
		t.Errorf("ApplyError = %+v", ae)
	}
	if !errors.Is(err, &gitdiff.Conflict{}) {
		t.Errorf("err %v does not wrap a gitdiff conflict", err)
	}
	for _, w := range []string{"0001-test.patch", "a.go", "@@ -7,5 +7,5 @@", "conflict: fragment line does not match src line"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if got := testfs.ReadTree(t, dir)["a.go"]; !strings.Contains(got, "// seven") {
		t.Errorf("failed apply changed a.go: %q", got)
	}
}

func TestApplyMissingAndExistingFiles(t *testing.T) {
	mod := parse(t, gitPatch(t, map[string]string{"a.go": "package a\n"}, map[string]string{"a.go": "package b\n"}, carrySubject))
	_, err := mod.Apply(t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "a.go: file to patch does not exist") {
		t.Errorf("patching a missing file: %v", err)
	}

	add := parse(t, gitPatch(t, nil, map[string]string{"n.go": "package n\n"}, carrySubject))
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"n.go": "package other\n"})
	_, err = add.Apply(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "n.go: new file already exists") {
		t.Errorf("adding an existing file: %v", err)
	}

	del := parse(t, gitPatch(t, map[string]string{"d.go": "package d\n"}, map[string]string{"x.go": "package x\n"}, carrySubject))
	dir = t.TempDir()
	writeTree(t, dir, map[string]string{"d.go": "package changed\n"})
	_, err = del.Apply(dir, nil)
	// git writes "@@ -1 +0,0 @@"; the error spells out both counts.
	if err == nil || !strings.Contains(err.Error(), "d.go: hunk @@ -1,1 +0,0 @@") {
		t.Errorf("deleting a file with other content: %v", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "d.go")); serr != nil {
		t.Errorf("failed delete removed d.go: %v", serr)
	}
}

func TestParsePatchRejectsEscapingPaths(t *testing.T) {
	data := gitPatch(t, map[string]string{"a.go": "package a\n"}, map[string]string{"a.go": "package b\n"}, carrySubject)
	data = []byte(strings.ReplaceAll(string(data), "a/a.go", "a/../../etc/a.go"))
	data = []byte(strings.ReplaceAll(string(data), "b/a.go", "b/../../etc/a.go"))
	if _, err := ParsePatch("0001-x.patch", data); err == nil || !strings.Contains(err.Error(), "leaves the module directory") {
		t.Fatalf("ParsePatch = %v", err)
	}
}

// twoPatchSeries is a series of two patches to a.go ("package a\n"): the
// first adds var A = 1, the second sets it to 2 and adds a_test.go.
func twoPatchSeries(t *testing.T) *Series {
	t.Helper()
	p1 := gitPatch(t, map[string]string{"a.go": "package a\n"}, map[string]string{"a.go": "package a\n\nvar A = 1\n"}, carrySubject)
	p2 := gitPatch(t, map[string]string{"a.go": "package a\n\nvar A = 1\n"}, map[string]string{"a.go": "package a\n\nvar A = 2\n", "a_test.go": "package a\n"}, carrySubject)
	dir := t.TempDir()
	writeSeries(t, dir, "0001-one.patch\n0002-two.patch\n", map[string][]byte{"0001-one.patch": p1, "0002-two.patch": p2})
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSeriesApply(t *testing.T) {
	s := twoPatchSeries(t)
	tree := t.TempDir()
	writeTree(t, tree, map[string]string{"a.go": "package a\n"})
	n, err := s.Apply(tree, func(p string) bool { return strings.HasSuffix(p, "_test.go") })
	if err != nil || n != 1 {
		t.Fatalf("tests-only Apply = %d, %v; want 1 patch", n, err)
	}
	tree = t.TempDir()
	writeTree(t, tree, map[string]string{"a.go": "package a\n"})
	if n, err := s.Apply(tree, nil); err != nil || n != 2 {
		t.Fatalf("Apply = %d, %v", n, err)
	}
	if got := testfs.ReadTree(t, tree)["a.go"]; got != "package a\n\nvar A = 2\n" {
		t.Errorf("a.go = %q", got)
	}
}

// AppliedIn tells a tree carrying the series from one without it, or with
// only part of it, also inside another git repository.
func TestAppliedIn(t *testing.T) {
	s := twoPatchSeries(t)
	outer := t.TempDir()
	if out, err := exec.Command("git", "-C", outer, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		keep func(string) bool
		want bool
	}{
		{name: "without", keep: func(string) bool { return false }},
		{name: "tests only", keep: func(p string) bool { return strings.HasSuffix(p, "_test.go") }},
		{name: "with", want: true},
	} {
		tree := filepath.Join(outer, strings.ReplaceAll(tc.name, " ", "-"))
		writeTree(t, tree, map[string]string{"a.go": "package a\n"})
		if _, err := s.Apply(tree, tc.keep); err != nil {
			t.Fatal(err)
		}
		if got, err := s.AppliedIn(ctx, tree); err != nil || got != tc.want {
			t.Errorf("%s: AppliedIn = %t, %v; want %t", tc.name, got, err, tc.want)
		}
	}
	if _, err := s.AppliedIn(ctx, filepath.Join(outer, "missing")); err == nil {
		t.Error("AppliedIn of a missing directory: no error")
	}
}
