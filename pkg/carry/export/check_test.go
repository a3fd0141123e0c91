package export

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
)

const apimachinery = "staging/src/k8s.io/apimachinery"

// carryFiles is a module-relative patch that modifies, renames, creates,
// deletes and copies files.
func carryFiles() []*gitdiff.File {
	return []*gitdiff.File{
		{OldName: "pkg/api/meta/meta.go", NewName: "pkg/api/meta/meta.go"},
		{OldName: "pkg/old.go", NewName: "pkg/new.go", IsRename: true},
		{NewName: "pkg/api/meta/meta_test.go", IsNew: true},
		{OldName: "gone.go", IsDelete: true},
		{OldName: "pkg/api/meta/meta.go", NewName: "pkg/copy.go", IsCopy: true},
	}
}

// moved returns files with dir/ prepended to every name, as git am
// --directory does.
func moved(files []*gitdiff.File, dir string) []*gitdiff.File {
	var out []*gitdiff.File
	for _, f := range files {
		g := *f
		if g.OldName != "" {
			g.OldName = dir + "/" + g.OldName
		}
		if g.NewName != "" {
			g.NewName = dir + "/" + g.NewName
		}
		out = append(out, &g)
	}
	return out
}

func TestCheckPaths(t *testing.T) {
	src := carryFiles()
	if err := checkPaths(src, moved(src, apimachinery), apimachinery); err != nil {
		t.Errorf("mapped patch: %v", err)
	}
	// The fork root: paths stay as they are.
	if err := checkPaths(src, src, ""); err != nil {
		t.Errorf("root module: %v", err)
	}
	// git may write a copy as a new file, or a rename as a delete and a
	// create: the same paths change.
	alt := moved([]*gitdiff.File{
		{OldName: "pkg/api/meta/meta.go", NewName: "pkg/api/meta/meta.go"},
		{OldName: "pkg/old.go", IsDelete: true},
		{NewName: "pkg/new.go", IsNew: true},
		{NewName: "pkg/api/meta/meta_test.go", IsNew: true},
		{OldName: "gone.go", IsDelete: true},
		{NewName: "pkg/copy.go", IsNew: true},
	}, apimachinery)
	if err := checkPaths(src, alt, apimachinery); err != nil {
		t.Errorf("equivalent shapes: %v", err)
	}

	bad := []struct {
		name string
		out  []*gitdiff.File
		want string
	}{
		{"unmapped", src, "path pkg/api/meta/meta.go is not in the module's fork directory staging/src/k8s.io/apimachinery/"},
		{"other module", moved(src, "staging/src/k8s.io/apiserver"), "is not in the module's fork directory"},
		{"prefix without slash", moved(src, apimachinery+"-extra"), "path staging/src/k8s.io/apimachinery-extra/pkg/api/meta/meta.go is not in"},
		{"rename target outside", func() []*gitdiff.File {
			f := moved(src, apimachinery)
			f[1].NewName = "staging/src/k8s.io/apiserver/pkg/new.go"
			return f
		}(), "path staging/src/k8s.io/apiserver/pkg/new.go is not in the module's fork directory"},
		{"a file missing", moved(src[:4], apimachinery), "but the carry patch changes gone.go, pkg/api/meta/meta.go, pkg/api/meta/meta_test.go, pkg/copy.go, pkg/new.go, pkg/old.go"},
		{"new file elsewhere", moved([]*gitdiff.File{src[0], src[1], {NewName: "pkg/api/meta/other_test.go", IsNew: true}, src[3], src[4]}, apimachinery), "changes gone.go, pkg/api/meta/meta.go, pkg/api/meta/other_test.go"},
	}
	for _, tt := range bad {
		if err := checkPaths(src, tt.out, apimachinery); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

const srcPatch = `From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Carry Tester <tester@example.com>
Date: Thu, 1 Jan 2026 00:00:00 +0000
Subject: [PATCH] UPSTREAM: <carry>: meta: own the maps

Clone them.

Signed-off-by: Carry Tester <tester@example.com>
---
 pkg/api/meta/meta.go | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/pkg/api/meta/meta.go b/pkg/api/meta/meta.go
index 1111111..2222222 100644
--- a/pkg/api/meta/meta.go
+++ b/pkg/api/meta/meta.go
@@ -1,3 +1,3 @@
 package meta
 
-var owned = false
+var owned = true
`

// exportedText is srcPatch as export writes it: numbered subject, fork paths.
func exportedText(prefix, subject string) string {
	s := strings.Replace(srcPatch, "[PATCH] UPSTREAM: <carry>: meta: own the maps", prefix+" "+subject, 1)
	return strings.ReplaceAll(s, " a/pkg/", " a/"+apimachinery+"/pkg/")
}

func TestCheckExported(t *testing.T) {
	src, err := series.ParsePatch("0001-src.patch", []byte(srcPatch))
	if err != nil {
		t.Fatal(err)
	}
	mapped := func(s string) string {
		s = strings.ReplaceAll(s, " b/pkg/", " b/"+apimachinery+"/pkg/")
		return strings.ReplaceAll(s, " pkg/api", " "+apimachinery+"/pkg/api")
	}
	check := func(text string, n, total int) error {
		path := filepath.Join(t.TempDir(), "out.patch")
		testfs.Write(t, path, text)
		_, err := checkExported(src, path, n, total, apimachinery)
		return err
	}
	good := mapped(exportedText("[PATCH 2/3]", "UPSTREAM: <carry>: meta: own the maps"))
	if err := check(good, 2, 3); err != nil {
		t.Errorf("good export: %v", err)
	}

	// Subjects are checked with commitchecker's expression after [PATCH n/m].
	for subject, ok := range map[string]bool{
		"UPSTREAM: <carry>: meta: own the maps":                true,
		"UPSTREAM: <drop>: meta: own the maps":                 true,
		"UPSTREAM: 12345: meta: own the maps":                  true,
		"UPSTREAM: revert: <carry>: meta: own the maps":        true,
		"UPSTREAM: k8s.io/apimachinery: <carry>: own the maps": true,
		"meta: own the maps":                                   false,
		"UPSTREAM: carry: meta: own the maps":                  false,
		"UPSTREAM <carry>: meta: own the maps":                 false,
		"[carry] UPSTREAM: <carry>: meta: own the maps":        false,
	} {
		err := check(mapped(exportedText("[PATCH 1/1]", subject)), 1, 1)
		switch {
		case ok && err != nil && strings.Contains(err.Error(), "does not match"):
			t.Errorf("subject %q rejected: %v", subject, err)
		case !ok && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("subject %q does not match", subject))):
			t.Errorf("subject %q: %v, want a subject error", subject, err)
		}
	}

	bad := []struct {
		name, text string
		want       string
	}{
		{"numbering", strings.Replace(good, "[PATCH 2/3]", "[PATCH 1/3]", 1), `subject prefix "[PATCH 1/3]", want "[PATCH 2/3]"`},
		{"author", strings.Replace(good, "From: Carry Tester", "From: Someone Else", 1), "does not carry the header of 0001-src.patch: author Someone Else <tester@example.com>, want Carry Tester <tester@example.com>"},
		{"date", strings.Replace(good, "Date: Thu, 1 Jan 2026 00:00:00 +0000", "Date: Thu, 1 Jan 2026 00:00:01 +0000", 1), "date Thu, 01 Jan 2026 00:00:01 +0000, want Thu, 01 Jan 2026 00:00:00 +0000"},
		{"body", strings.Replace(good, "Clone them.", "Clone them, maybe.", 1), "the message body differs"},
		{"sign-off", strings.Replace(good, "Signed-off-by: Carry Tester <tester@example.com>\n", "", 1), "the message body differs"},
		{"paths", exportedText("[PATCH 2/3]", "UPSTREAM: <carry>: meta: own the maps"), "is not in the module's fork directory"},
	}
	for _, tt := range bad {
		if err := check(tt.text, 2, 3); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestCompareTrees(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		testfs.Write(t, filepath.Join(d, "same.go"), "same")
		testfs.Write(t, filepath.Join(d, "sub/diff.go"), "content of "+d)
	}
	testfs.Write(t, filepath.Join(a, "only-a.go"), "a")
	testfs.Write(t, filepath.Join(a, "nested/mod/x.go"), "skipped")
	testfs.Write(t, filepath.Join(b, "only-b.go"), "b")
	diffs, err := CompareTrees(a, b, []string{"nested/mod"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"differs: sub/diff.go", "only in " + a + ": only-a.go", "only in " + b + ": only-b.go"}
	if strings.Join(diffs, "\n") != strings.Join(want, "\n") {
		t.Errorf("CompareTrees = %q, want %q", diffs, want)
	}
}
