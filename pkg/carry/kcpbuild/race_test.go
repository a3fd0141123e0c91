package kcpbuild

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/versionstamp"
)

func TestRaceVersionStamp(t *testing.T) {
	v := versionstamp.Info{KubeVersion: "v1.36.0", KCPDescribe: "v0.32.3", CarryID: "0123456789", BuildDate: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Race: true}
	if got, want := v.GitVersion(), "v1.36.0+kcp-v0.32.3-carry-0123456789-race"; got != want {
		t.Errorf("GitVersion() = %q, want %q", got, want)
	}
	if id, describe, ok := versionstamp.ReadCarry(v.GitVersion()); !ok || id != v.CarryID || describe != v.KCPDescribe {
		t.Errorf("versionstamp.ReadCarry(%q) = %q, %q, %t: a carried race build is a carried build", v.GitVersion(), id, describe, ok)
	}
	if !versionstamp.IsRaceBuild(v.GitVersion()) {
		t.Errorf("IsRaceBuild(%q) = false", v.GitVersion())
	}
	flags, err := v.LDFlags()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(flags, "-static") {
		t.Errorf("a race build links the C library dynamically, got %s", flags)
	}
	v.Pristine = true
	if got, want := v.GitVersion(), "v1.36.0+kcp-v0.32.3-pristine-race"; got != want {
		t.Errorf("pristine GitVersion() = %q, want %q", got, want)
	}
	if _, _, ok := versionstamp.ReadCarry(v.GitVersion()); ok {
		t.Errorf("versionstamp.ReadCarry(%q) = true for a pristine race build", v.GitVersion())
	}
	v.Race, v.Pristine = false, false
	for _, gv := range []string{v.GitVersion(), "v1.36.0+kcp-v0.32.3", "v1.36.0-race", ""} {
		if versionstamp.IsRaceBuild(gv) {
			t.Errorf("IsRaceBuild(%q) = true", gv)
		}
	}
}

func TestRaceRefusesCrossCompiling(t *testing.T) {
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	_, err := Build(context.Background(), Options{Root: t.TempDir(), Race: true, GOARCH: other})
	if err == nil || !strings.Contains(err.Error(), "--race") || !strings.Contains(err.Error(), "cross-compile") {
		t.Errorf("Build(--race, GOARCH=%s) = %v, want a refusal naming --race and cross-compiling", other, err)
	}
	o, err := Options{Carry: &carryset.Carry{Root: "/r"}, Race: true}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if o.OutDir != filepath.Join("/r", "bin", "race") {
		t.Errorf("a race build's default OutDir is %s, want /r/bin/race (never over bin/kcp)", o.OutDir)
	}
}

// A machine without the C compiler `go env CC` names gets an error naming it
// before anything is built.
func TestRaceNeedsACCompiler(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	t.Setenv("CC", "/nonexistent/kcp-carry-cc")
	out := filepath.Join(t.TempDir(), "out")
	_, err := Build(context.Background(), Options{Root: t.TempDir(), Race: true, KCPSource: t.TempDir(), OutDir: out})
	var cce *CCompilerError
	if !errors.As(err, &cce) || cce.CC != "/nonexistent/kcp-carry-cc" {
		t.Fatalf("Build(--race) without a C compiler = %v, want a CCompilerError naming /nonexistent/kcp-carry-cc", err)
	}
	if !strings.Contains(err.Error(), "C compiler") || !strings.Contains(err.Error(), "go env CC") {
		t.Errorf("error %q does not say what is missing", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the failed race build wrote %s", out)
	}
}

func TestRaceBuildReadsBuildInfo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a -race binary")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module m\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, race := range []bool{false, true} {
		bin := filepath.Join(dir, "m")
		args := []string{"build", "-o", bin}
		cgo := "CGO_ENABLED=0"
		if race {
			args, cgo = append(args, "-race"), "CGO_ENABLED=1"
		}
		cmd := exec.Command("go", append(args, ".")...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", cgo)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		got, err := RaceBuild(bin)
		if err != nil || got != race {
			t.Errorf("RaceBuild of a build with -race=%t: %t, %v", race, got, err)
		}
	}
}
