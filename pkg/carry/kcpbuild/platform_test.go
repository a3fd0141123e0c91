package kcpbuild

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
)

// TestCrossCompileOptions: GOOS/GOARCH reach the go command after anything
// inherited, with CGO off, and cross-compiled binaries get their own bin/ dir.
func TestCrossCompileOptions(t *testing.T) {
	t.Setenv("GOARCH", "386")
	o, err := Options{Carry: &carryset.Carry{Root: "/repo"}, GOOS: "linux", GOARCH: "arm64"}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join("/repo", "bin", "linux_arm64"); o.OutDir != want {
		t.Errorf("OutDir = %s, want %s", o.OutDir, want)
	}
	env := (&builder{opts: o}).goEnv("off", "")
	last := func(key string) string {
		for j := len(env) - 1; j >= 0; j-- {
			if v, ok := strings.CutPrefix(env[j], key+"="); ok {
				return v
			}
		}
		return ""
	}
	for key, want := range map[string]string{"GOOS": "linux", "GOARCH": "arm64", "CGO_ENABLED": "0"} {
		if got := last(key); got != want {
			t.Errorf("the go command sees %s=%s, want %s", key, got, want)
		}
	}

	host, err := Options{Carry: &carryset.Carry{Root: "/repo"}}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join("/repo", "bin"); host.OutDir != want {
		t.Errorf("OutDir without GOOS/GOARCH = %s, want %s", host.OutDir, want)
	}
}
