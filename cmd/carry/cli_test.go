package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/pkg/util/reporoot"
)

func TestMainUsageAndExitCodes(t *testing.T) {
	tests := []struct {
		args        []string
		code        int
		out, errOut string
	}{
		{nil, ExitUsage, "", "usage: carry <command>"},
		{[]string{"help"}, ExitOK, "refresh ", ""},
		{[]string{"diff"}, ExitUsage, "", `carry: unknown command "diff"`},
		{[]string{"frobnicate"}, ExitUsage, "", `carry: unknown command "frobnicate"`},
		{[]string{"overlay", "--nope"}, ExitUsage, "", "flag provided but not defined: -nope"},
		{[]string{"overlay", "extra"}, ExitUsage, "", "unexpected arguments: extra"},
		{[]string{"pins", "-h"}, ExitOK, "", "usage: carry pins [--write | --kcp-source DIR]"},
		{[]string{"refresh", "--new", "0002-x.patch"}, ExitUsage, "", "--new and --subject go together"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := Main(tt.args, &stdout, &stderr)
		if code != tt.code || !strings.Contains(stdout.String(), tt.out) || !strings.Contains(stderr.String(), tt.errOut) {
			t.Errorf("carry %v = %d\nstdout: %s\nstderr: %s\nwant %d, stdout ~ %q, stderr ~ %q",
				tt.args, code, stdout.String(), stderr.String(), tt.code, tt.out, tt.errOut)
		}
	}
}

func TestRepoRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module "+reporoot.ModulePath+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A nested module of another name does not stop the search.
	sub := filepath.Join(root, "test", "e2e")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "test", "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	var stderr bytes.Buffer
	fs := newFlagSet("x", "x", &stderr)
	got, err := fs.repoRoot()
	if err != nil || got != root {
		t.Errorf("repoRoot = %q, %v; want %q", got, err, root)
	}

	t.Chdir(t.TempDir())
	if _, err := fs.repoRoot(); err == nil || !strings.Contains(err.Error(), "use --root") {
		t.Errorf("outside the repository: %v", err)
	}
	fs.root = "rel"
	if got, err := fs.repoRoot(); err != nil || !filepath.IsAbs(got) {
		t.Errorf("--root rel = %q, %v", got, err)
	}
}

func TestCommandsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Commands() {
		if seen[c.Name] {
			t.Errorf("command name %q used twice", c.Name)
		}
		seen[c.Name] = true
		if c.Run == nil || c.Summary == "" {
			t.Errorf("command %q lacks Run or Summary", c.Name)
		}
	}
}
