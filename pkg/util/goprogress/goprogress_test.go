package goprogress

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

// TestMeterCountsExpectedPackages: the names of the expected packages are
// counted and swallowed, every other line of the go command goes on, and
// the last line says how many of how many were compiled.
func TestMeterCountsExpectedPackages(t *testing.T) {
	var out strings.Builder
	m := NewMeter("build", &out, []string{"example.com/a", "example.com/b", "example.com/c"})
	m.Interval = time.Hour
	m.Start()
	for _, chunk := range []string{"example.com/a\ngo: downloading example.com/x v1.0.0\nexam", "ple.com/b\n", "# example.com/c\nc.go:1: oops\n"} {
		if _, err := m.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.Compiled(); got != 2 {
		t.Errorf("Compiled() = %d, want 2 (a and b; the error header for c is not a compiled package)", got)
	}
	m.Stop(nil)
	got := out.String()
	for _, want := range []string{
		"build: 3 packages to compile",
		"go: downloading example.com/x v1.0.0\n",
		"# example.com/c\nc.go:1: oops\n",
		"build: done, 2 of 3 packages compiled, ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "example.com/a\n") {
		t.Errorf("a counted package's name was passed on:\n%s", got)
	}
}

// TestMeterReportsEachInterval: a progress line at each tick while the
// build runs.
func TestMeterReportsEachInterval(t *testing.T) {
	var out syncBuilder
	m := NewMeter("build", &out, []string{"example.com/a"})
	m.Interval = 10 * time.Millisecond
	m.Start()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(out.String(), "0 of 1 packages compiled") < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	m.Stop(os.ErrClosed)
	got := out.String()
	if n := strings.Count(got, "build: 0 of 1 packages compiled"); n < 2 {
		t.Errorf("%d interval lines, want at least 2:\n%s", n, got)
	}
	if !strings.Contains(got, "build: failed, 0 of 1 packages compiled") {
		t.Errorf("no last line saying the build failed:\n%s", got)
	}
}

// TestStaleAndBuildAgree builds a small module: Stale names its packages
// before the first build and none after it, and the meter counts each
// package `go build -v` compiles.
func TestStaleAndBuildAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":  "module example.com/m\n\ngo 1.22\n",
		"main.go": "package main\n\nimport \"example.com/m/lib\"\n\nfunc main() { lib.Hello() }\n",
		// Unique per run, so the shared build cache cannot hold it yet.
		"lib/lib.go": fmt.Sprintf("package lib\n\nconst run = %d\n\nfunc Hello() {}\n", time.Now().UnixNano()),
	}
	testfs.WriteTree(t, dir, files)
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-trimpath")
	ctx := context.Background()
	stale, err := Stale(ctx, dir, env, nil, []string{"."}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"example.com/m", "example.com/m/lib"} {
		if !slices.Contains(stale, want) {
			t.Errorf("Stale before the first build = %v, want it to name %s", stale, want)
		}
	}
	var out strings.Builder
	m := NewMeter("build", &out, stale)
	m.Interval = time.Hour
	m.Start()
	cmd := exec.Command("go", "build", "-v", "-o", filepath.Join(dir, "m"), ".")
	cmd.Dir, cmd.Env, cmd.Stderr = dir, env, m
	err = cmd.Run()
	m.Stop(err)
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out.String())
	}
	if m.Compiled() != len(stale) {
		t.Errorf("compiled %d of %d stale packages:\n%s", m.Compiled(), len(stale), out.String())
	}
	after, err := Stale(ctx, dir, env, nil, []string{"."}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// The main package stays stale for `go list` (its binary is not
	// cached); the library must not be.
	if slices.Contains(after, "example.com/m/lib") {
		t.Errorf("Stale after the build = %v, still names example.com/m/lib", after)
	}
}

type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuilder) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuilder) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
