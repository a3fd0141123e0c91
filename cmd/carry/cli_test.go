package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/util/reporoot"
)

func TestMainUsageAndExitCodes(t *testing.T) {
	tests := []struct {
		args        []string
		code        int
		out, errOut string
	}{
		{nil, ExitUsage, "", "carry [command]"},
		{[]string{"help"}, ExitOK, "refresh ", ""},
		{[]string{"--help"}, ExitOK, "Available Commands:", ""},
		{[]string{"diff"}, ExitUsage, "", `carry: unknown command "diff"`},
		{[]string{"frobnicate"}, ExitUsage, "", `carry: unknown command "frobnicate"`},
		{[]string{"overlay", "--nope"}, ExitUsage, "", "carry overlay: unknown flag: --nope"},
		{[]string{"overlay", "extra"}, ExitUsage, "", "unexpected arguments: extra"},
		{[]string{"pins", "-h"}, ExitOK, "carry pins [--write | --kcp-source DIR]", ""},
		{[]string{"refresh", "--new", "0002-x.patch"}, ExitUsage, "", "carry refresh: --new and --subject go together"},
		{[]string{"scrub", "--force"}, ExitUsage, "", "carry scrub: --force goes with --apply"},
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

// TestHelp: `carry --help` lists every subcommand, and each subcommand's
// --help its flags.
func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"--help"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("carry --help = %d: %s", code, stderr.String())
	}
	for _, c := range NewCommand(io.Discard, io.Discard).Commands() {
		if c.Name() == "help" {
			continue
		}
		if !strings.Contains(stdout.String(), "  "+c.Name()+" ") {
			t.Errorf("carry --help does not list %s:\n%s", c.Name(), stdout.String())
		}
		var sub bytes.Buffer
		if code := Main([]string{c.Name(), "--help"}, &sub, io.Discard); code != ExitOK {
			t.Errorf("carry %s --help = %d", c.Name(), code)
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !strings.Contains(sub.String(), "--"+f.Name+" ") {
				t.Errorf("carry %s --help does not list --%s:\n%s", c.Name(), f.Name, sub.String())
			}
		})
	}
}

// TestBadFlag: a single bad flag is a usage error that names the flag, on
// stderr with the command's usage, and runs nothing.
func TestBadFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pins", "--wirte"}, "carry pins: unknown flag: --wirte"},
		{[]string{"export", "-out", "x"}, "carry export: unknown shorthand flag: 'o' in -out"}, // one dash: shorthand letters
		{[]string{"scrub", "--page-size", "ten"}, `carry scrub: invalid argument "ten" for "--page-size" flag`},
		{[]string{"build", "--replace", "nodir"}, `carry build: invalid argument "nodir" for "--replace" flag: want MODULE=DIR, got "nodir"`},
		{[]string{"image", "--out", "o", "--platform", "linux"}, `carry image: invalid argument "linux" for "--platform" flag: want OS/ARCH such as linux/arm64, got "linux"`},
		{[]string{"verify", "--json=maybe"}, `carry verify: invalid argument "maybe" for "--json" flag`},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(tc.args, &stdout, &stderr)
		if code != ExitUsage || stdout.Len() != 0 || !strings.HasPrefix(stderr.String(), tc.want) || !strings.Contains(stderr.String(), "Usage:") {
			t.Errorf("carry %q = %d\nstdout: %s\nstderr: %s\nwant %d and stderr starting %q, then the usage", tc.args, code, stdout.String(), stderr.String(), ExitUsage, tc.want)
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
	var o commonOptions
	got, err := o.repoRoot()
	if err != nil || got != root {
		t.Errorf("repoRoot = %q, %v; want %q", got, err, root)
	}

	t.Chdir(t.TempDir())
	if _, err := o.repoRoot(); err == nil || !strings.Contains(err.Error(), "use --root") {
		t.Errorf("outside the repository: %v", err)
	}
	o.root = "rel"
	if got, err := o.repoRoot(); err != nil || !filepath.IsAbs(got) {
		t.Errorf("--root rel = %q, %v", got, err)
	}
}

func TestCommandsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range NewCommand(io.Discard, io.Discard).Commands() {
		if seen[c.Name()] {
			t.Errorf("command name %q used twice", c.Name())
		}
		seen[c.Name()] = true
		if c.RunE == nil && c.Run == nil || c.Short == "" {
			t.Errorf("command %q lacks Run or Short", c.Name())
		}
	}
}
