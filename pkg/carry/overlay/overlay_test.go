package overlay

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/internal/testproxy"
	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
)

func TestPlanGoWorkOutsideRoot(t *testing.T) {
	// A verify or kcp build run keeps its go.work and overlay in a scratch
	// directory while using the repository module.
	root := filepath.Join(t.TempDir(), "repo")
	scratch := t.TempDir()
	p, err := planGoWork(filepath.Join(scratch, "go.work"), root, filepath.Join(scratch, "overlay"), []string{"k8s.io/apiserver"}, "1.26.0")
	if err != nil {
		t.Fatal(err)
	}
	rootRel, _ := filepath.Rel(scratch, root)
	want := "go 1.26.0\n\nuse " + filepath.ToSlash(rootRel) + "\n\nreplace k8s.io/apiserver => ./overlay/k8s.io/apiserver\n"
	if string(p.data) != want || !p.changed || p.exists {
		t.Errorf("plan = %+v\n%s\nwant\n%s", p, p.data, want)
	}
}

func TestPlanGoWorkUnchanged(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "go.work")
	content := "go 1.26.0\n\nuse .\n\nreplace k8s.io/apiserver => ./.overlay/k8s.io/apiserver\n"
	testfs.Write(t, work, content)
	p, err := planGoWork(work, root, filepath.Join(root, ".overlay"), []string{"k8s.io/apiserver"}, "1.26.0")
	if err != nil {
		t.Fatal(err)
	}
	if p.changed || string(p.data) != content {
		t.Errorf("plan = %+v\n%s", p, p.data)
	}
	// The module is no longer carried: its replace goes.
	p, err = planGoWork(work, root, filepath.Join(root, ".overlay"), nil, "1.26.0")
	if err != nil {
		t.Fatal(err)
	}
	if !p.changed || string(p.data) != "go 1.26.0\n\nuse .\n" {
		t.Errorf("plan = %+v\n%s", p, p.data)
	}
}

// fixture is a synthetic fork module served by a test proxy, and a
// repository root whose go.mod pins it and whose carry patches it.
type fixture struct {
	root string
	fork module.Version
}

const libGo = "package lib\n\nfunc Greeting() string {\n\treturn \"pristine\"\n}\n"
const libTestGo = "package lib\n\nconst want = \"pristine\"\n"

// carryPatch changes lib.go and lib_test.go.
const carryPatch = `From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Carry Tester <tester@example.com>
Date: Thu, 1 Jan 2026 00:00:00 +0000
Subject: [PATCH] UPSTREAM: <carry>: patch lib and its test

---
diff --git a/lib.go b/lib.go
index 1111111..2222222 100644
--- a/lib.go
+++ b/lib.go
@@ -1,5 +1,5 @@
 package lib
 
 func Greeting() string {
-	return "pristine"
+	return "patched"
 }
diff --git a/lib_test.go b/lib_test.go
index 3333333..4444444 100644
--- a/lib_test.go
+++ b/lib_test.go
@@ -1,3 +1,3 @@
 package lib
 
-const want = "pristine"
+const want = "patched"
`

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not available")
	}
	base := t.TempDir()
	proxy := filepath.Join(base, "proxy")
	fork := module.Version{Path: "example.com/fork/lib", Version: "v0.0.0-20260101000000-aaaaaaaaaaaa"}
	src := filepath.Join(base, "src")
	testfs.Write(t, filepath.Join(src, "go.mod"), "module example.com/lib\n\ngo 1.22\n")
	testfs.Write(t, filepath.Join(src, "lib.go"), libGo)
	testfs.Write(t, filepath.Join(src, "lib_test.go"), libTestGo)
	h1, err := testproxy.Add(proxy, fork, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	testproxy.Serve(t, proxy, filepath.Join(base, "modcache"))

	root := filepath.Join(base, "repo")
	testfs.Write(t, filepath.Join(root, "go.mod"), "module example.com/repo\n\ngo 1.22\n\nrequire example.com/lib v0.1.0\n\nreplace example.com/lib => "+fork.Path+" "+fork.Version+"\n")
	testfs.Write(t, filepath.Join(root, "go.sum"), fork.Path+" "+fork.Version+" "+h1+"\n")
	testfs.Write(t, filepath.Join(root, "staging-patches/example.com/lib/series"), "0001-patch.patch\n")
	testfs.Write(t, filepath.Join(root, "staging-patches/example.com/lib/0001-patch.patch"), carryPatch)
	return &fixture{root: root, fork: fork}
}

func TestRunFilterAndStamps(t *testing.T) {
	f := newFixture(t)
	overlayDir := filepath.Join(t.TempDir(), "tests-overlay")
	isTest := func(p string) bool { return strings.HasSuffix(p, "_test.go") }

	if _, err := Run(context.Background(), Options{Root: f.root, OverlayDir: overlayDir, Filter: isTest}); err == nil || !strings.Contains(err.Error(), "FilterName") {
		t.Fatalf("Filter without FilterName: %v", err)
	}

	var progress bytes.Buffer
	res, err := Run(context.Background(), Options{Root: f.root, OverlayDir: overlayDir, Filter: isTest, FilterName: "tests", Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	dir := ModuleDir(overlayDir, "example.com/lib")
	if got := testfs.Read(t, filepath.Join(dir, "lib.go")); got != libGo {
		t.Errorf("filtered overlay patched lib.go:\n%s", got)
	}
	if got := testfs.Read(t, filepath.Join(dir, "lib_test.go")); !strings.Contains(got, `"patched"`) {
		t.Errorf("filtered overlay did not patch lib_test.go:\n%s", got)
	}
	if res.UpToDate || len(res.Modules) != 1 || res.Modules[0].Fork != f.fork || !res.Modules[0].Rebuilt || res.GoWork != "" {
		t.Errorf("result = %+v", res)
	}
	if !strings.Contains(progress.String(), "example.com/lib: verified h1:") {
		t.Errorf("progress = %q", progress.String())
	}
	if _, err := os.Stat(filepath.Join(f.root, "go.work")); !os.IsNotExist(err) {
		t.Errorf("go.work written without GoWorkPath: %v", err)
	}
	st, err := ReadStamp(overlayDir, "example.com/lib")
	if err != nil {
		t.Fatal(err)
	}
	if st.Filter != "tests" || st.Fork != f.fork.Path || st.Version != f.fork.Version || st.TreeHash != res.Modules[0].TreeHash {
		t.Errorf("stamp = %+v", st)
	}

	// Same options: up to date. Without the filter: rebuilt in full.
	res, err = Run(context.Background(), Options{Root: f.root, OverlayDir: overlayDir, Filter: isTest, FilterName: "tests"})
	if err != nil || !res.UpToDate {
		t.Fatalf("second filtered run: %+v, %v", res, err)
	}
	res, err = Run(context.Background(), Options{Root: f.root, OverlayDir: overlayDir})
	if err != nil || res.UpToDate {
		t.Fatalf("unfiltered run: %+v, %v", res, err)
	}
	if got := testfs.Read(t, filepath.Join(dir, "lib.go")); !strings.Contains(got, `"patched"`) {
		t.Errorf("full overlay did not patch lib.go:\n%s", got)
	}
	entries, err := os.ReadDir(filepath.Dir(overlayDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("left behind next to the overlay: %v", entries)
	}
}

func TestRunRepinnedCarryAndGoWork(t *testing.T) {
	f := newFixture(t)
	// The carry on explicit pins, as a kcp build overlays it on the pins of
	// a kcp checkout.
	c, err := carryset.Load(f.root)
	if err != nil {
		t.Fatal(err)
	}
	goSum := filepath.Join(f.root, "go.sum")
	repinned, err := c.Repin(map[string]module.Version{"example.com/lib": f.fork}, goSum)
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	opts := Options{
		Carry:      repinned,
		OverlayDir: filepath.Join(scratch, "overlay"),
		GoWorkPath: filepath.Join(scratch, "go.work"),
	}
	res, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.GoWorkChanged || res.GoWork != opts.GoWorkPath {
		t.Errorf("result = %+v", res)
	}
	work := testfs.Read(t, opts.GoWorkPath)
	if !strings.Contains(work, "replace example.com/lib => ./overlay/example.com/lib\n") || !strings.Contains(work, "use ") {
		t.Errorf("go.work =\n%s", work)
	}

	if _, err := c.Repin(map[string]module.Version{"example.com/other": f.fork}, goSum); err == nil || !strings.Contains(err.Error(), "example.com/lib: no pin given") {
		t.Errorf("missing explicit pin: %v", err)
	}
}
