package gitexec

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

func TestDate(t *testing.T) {
	d := time.Date(2026, 11, 30, 9, 17, 44, 0, time.FixedZone("", 90*60))
	if got := Date(d); got != "@1796024864 +0130" {
		t.Errorf("Date = %q", got)
	}
}

// TestIsolated: the caller's GIT_* variables, time zone, global
// configuration and the repository's hooks do not reach the run; the
// identity given does.
func TestIsolated(t *testing.T) {
	testfs.NeedCommands(t, "git")
	ctx := context.Background()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = From Home\n\temail = home@example.com\n[log]\n\tdate = iso\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("GIT_AUTHOR_NAME", "From Env")
	t.Setenv("GIT_COMMITTER_DATE", "@1 +0000")
	t.Setenv("TZ", "Asia/Tokyo")

	dir := t.TempDir()
	r := Repo{Dir: dir}
	if _, err := r.Run(ctx, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	who := Ident{Name: "Carry Tester", Email: "tester@example.com", Date: "@1767225600 +0100"}
	if _, err := r.With(who.Env()...).Run(ctx, "commit", "-q", "--allow-empty", "-m", "empty"); err != nil {
		t.Fatalf("commit (the failing hook must not run): %v", err)
	}
	out, err := r.Run(ctx, "log", "-1", "--format=%an <%ae> %ad | %cn %cd")
	if err != nil {
		t.Fatal(err)
	}
	want := "Carry Tester <tester@example.com> Thu Jan 1 01:00:00 2026 +0100 | Carry Tester Thu Jan 1 01:00:00 2026 +0100"
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("log = %q\nwant  %q", got, want)
	}
	// Without an identity git finds none: the user's is not used.
	if _, err := r.Run(ctx, "commit", "-q", "--allow-empty", "-m", "again"); err == nil {
		t.Error("commit without an Ident used the caller's identity")
	}
}

func TestRunError(t *testing.T) {
	testfs.NeedCommands(t, "git")
	dir := t.TempDir()
	_, err := Repo{Dir: dir}.Run(context.Background(), "rev-parse", "--verify", "HEAD")
	if err == nil {
		t.Fatal("rev-parse HEAD outside a repository succeeded")
	}
	for _, want := range []string{"git rev-parse --verify HEAD", "(in " + dir + ")", "not a git repository"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestTail(t *testing.T) {
	var lines []string
	for i := range 25 {
		lines = append(lines, strings.Repeat("x", i+1))
	}
	got := tail(strings.Join(lines, "\n")+"\n", 20)
	if !strings.HasPrefix(got, "(5 lines before)\nxxxxxx\n") || !strings.HasSuffix(got, strings.Repeat("x", 25)) {
		t.Errorf("tail =\n%s", got)
	}
	if got := tail("  one line \n", 20); got != "one line" {
		t.Errorf("tail = %q", got)
	}
}
