package modcache

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

var lib = module.Version{Path: "example.com/fork/lib", Version: "v0.0.0-20260101000000-abcdefabcdef"}

func TestParseGoSum(t *testing.T) {
	data := "example.com/a v1.0.0 h1:AAA=\n" +
		"example.com/a v1.0.0/go.mod h1:BBB=\n" +
		"\n" +
		"example.com/b   v0.0.0-20260101000000-abcdefabcdef   h1:CCC=\n"
	s, err := ParseGoSum("go.sum", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if h, err := s.ZipHash(module.Version{Path: "example.com/a", Version: "v1.0.0"}); err != nil || h != "h1:AAA=" {
		t.Errorf("a: %q, %v", h, err)
	}
	if h, err := s.ZipHash(module.Version{Path: "example.com/b", Version: "v0.0.0-20260101000000-abcdefabcdef"}); err != nil || h != "h1:CCC=" {
		t.Errorf("b: %q, %v", h, err)
	}
	_, err = s.ZipHash(module.Version{Path: "example.com/c", Version: "v1.0.0"})
	if err == nil || !strings.Contains(err.Error(), "go.sum has no h1: line for example.com/c@v1.0.0") {
		t.Errorf("missing line: %v", err)
	}
}

func TestParseGoSumErrors(t *testing.T) {
	for name, tc := range map[string]struct{ data, want string }{
		"fields":   {"example.com/a v1.0.0 h1:A=\nexample.com/a v1.0.0\n", "go.sum:2: malformed line"},
		"version":  {"example.com/a 1.0 h1:A=\n", "go.sum:1: "},
		"path":     {"Example..com/a v1.0.0 h1:A=\n", "go.sum:1: "},
		"conflict": {"example.com/a v1.0.0 h1:A=\nexample.com/a v1.0.0 h1:B=\n", "go.sum:2: second, different h1 hash"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseGoSum("go.sum", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func makeZip(t *testing.T, files map[string]string) string {
	t.Helper()
	src := t.TempDir()
	for name, content := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	zf := filepath.Join(t.TempDir(), "lib.zip")
	f, err := os.Create(zf)
	if err != nil {
		t.Fatal(err)
	}
	if err := zip.CreateFromDir(f, lib, src); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return zf
}

func TestVerifyAndExtract(t *testing.T) {
	files := map[string]string{"go.mod": "module example.com/lib\n", "lib.go": "package lib\n", "sub/x.go": "package sub\n"}
	zf := makeZip(t, files)
	want, err := dirhash.HashZip(zf, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyZip(lib, zf, want); err != nil {
		t.Fatalf("VerifyZip(correct hash) = %v", err)
	}

	other := makeZip(t, map[string]string{"go.mod": "module example.com/lib\n", "lib.go": "package lib // tampered\n", "sub/x.go": "package sub\n"})
	err = VerifyZip(lib, other, want)
	var mm *HashMismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("VerifyZip(other zip) = %v, want *HashMismatchError", err)
	}
	for _, w := range []string{lib.Path, lib.Version, other, "go.sum expects " + want} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}

	dir := filepath.Join(t.TempDir(), "tree")
	if err := Extract(dir, lib, zf); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		data, err := os.ReadFile(p)
		if err != nil || string(data) != content {
			t.Errorf("%s = %q, %v", name, data, err)
		}
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o200 == 0 {
			t.Errorf("%s is not writable: %v %v", name, fi.Mode(), err)
		}
	}
}
