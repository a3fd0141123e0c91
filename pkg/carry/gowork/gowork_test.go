package gowork

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

func TestNewWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "scratch")
	f, err := New(filepath.Join(dir, "go.work"), "1.26.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddUse("/repo"); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]string{{"k8s.io/b", "/overlay/b"}, {"k8s.io/a", "/overlay/a"}, {"k8s.io/b", "/elsewhere/b"}} {
		if err := f.AddReplace(r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	if !f.Changed() {
		t.Error("a new file is not Changed")
	}
	if err := f.Write(); err != nil {
		t.Fatal(err)
	}
	got := testfs.Read(t, f.Path)
	// The later replace of k8s.io/b wins; the order of the calls is kept.
	want := "go 1.26.0\n\nuse /repo\n\nreplace k8s.io/b => /elsewhere/b\n\nreplace k8s.io/a => /overlay/a\n"
	if got != want {
		t.Errorf("go.work =\n%s\nwant\n%s", got, want)
	}
	if f.Changed() {
		t.Error("Changed after Write")
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "go.work")
	f, err := Read(p)
	if err != nil || f.Exists() || f.Uses(".") {
		t.Fatalf("missing go.work: %+v, %v", f, err)
	}
	content := "go 1.25\n\nuse ./\n"
	testfs.Write(t, p, content)
	if f, err = Read(p); err != nil || !f.Exists() || !f.Uses(".") {
		t.Fatalf("go.work: %+v, %v", f, err)
	}
	if err := f.SetGoIfMissing("1.26.0"); err != nil || f.Work.Go.Version != "1.25" {
		t.Errorf("an existing go directive changed: %v, %v", f.Work.Go.Version, err)
	}
	if f.Changed() {
		t.Errorf("unchanged file is Changed:\n%s", f.Bytes())
	}
	testfs.Write(t, p, "use (\n")
	if _, err := Read(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("a broken go.work: %v, want an error naming %s", err, p)
	}
}

func TestRel(t *testing.T) {
	f := &File{Path: "/a/b/go.work"}
	for target, want := range map[string]string{"/a/b": ".", "/a/b/c/d": "./c/d", "/a": "..", "/a/x": "../x"} {
		if got := f.Rel(target); got != want {
			t.Errorf("Rel(%s) = %q, want %q", target, got, want)
		}
	}
}

func TestGoVersion(t *testing.T) {
	dir := t.TempDir()
	gomod := filepath.Join(dir, "go.mod")
	testfs.Write(t, gomod, "module example.com/m\n\ngo 1.26.0\n")
	if v, err := GoVersion(gomod); err != nil || v != "1.26.0" {
		t.Errorf("GoVersion = %q, %v", v, err)
	}
	testfs.Write(t, gomod, "module example.com/m\n")
	if _, err := GoVersion(gomod); err == nil || !strings.Contains(err.Error(), "no go directive") {
		t.Errorf("no go directive: %v", err)
	}
}

func TestNewer(t *testing.T) {
	for _, c := range [][3]string{{"1.26.0", "1.22", "1.26.0"}, {"1.22", "1.26.0", "1.26.0"}, {"1.26.0", "1.26rc1", "1.26.0"}, {"1.26.1", "1.26.1", "1.26.1"}} {
		if got := Newer(c[0], c[1]); got != c[2] {
			t.Errorf("Newer(%s, %s) = %s, want %s", c[0], c[1], got, c[2])
		}
	}
}
