package series

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

// gitPatch builds a git format-patch file turning the tree before into the
// tree after (nil content deletes the file), the way patches in
// staging-patches are made.
func gitPatch(t *testing.T, before, after map[string]string, subject string) []byte {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com", "GIT_AUTHOR_DATE=@1700000000 +0100",
			"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com", "GIT_COMMITTER_DATE=@1700000000 +0100")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return out
	}
	write := func(files map[string]string) {
		for name, content := range files {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	git("init", "-q")
	write(before)
	git("add", "-A")
	git("commit", "-q", "--allow-empty", "-m", "base")
	for name := range before {
		if _, ok := after[name]; !ok {
			git("rm", "-q", name)
		}
	}
	write(after)
	git("add", "-A")
	git("commit", "-q", "-m", subject)
	return git("format-patch", "-1", "--stdout", "--zero-commit", "--no-signature", "HEAD")
}

func writeSeries(t *testing.T, dir, series string, patches map[string][]byte) {
	t.Helper()
	files := map[string]string{FileName: series}
	for name, data := range patches {
		files[name] = string(data)
	}
	testfs.WriteTree(t, dir, files)
}

const carrySubject = "UPSTREAM: <carry>: change greeting"

func TestLoadOrderAndHash(t *testing.T) {
	p1 := gitPatch(t, map[string]string{"a.go": "package a\n"}, map[string]string{"a.go": "package a\n\nconst A = 1\n"}, carrySubject)
	p2 := gitPatch(t, map[string]string{"b.go": "package a\n"}, map[string]string{"b.go": "package a\n\nconst B = 2\n"}, "UPSTREAM: 12345: second")
	dir := t.TempDir()
	writeSeries(t, dir, "# the carry\n\n0002-second.patch\n0001-first.patch\n", map[string][]byte{
		"0001-first.patch": p1, "0002-second.patch": p2, "README": []byte("not a patch"),
	})
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Names(), ","); got != "0002-second.patch,0001-first.patch" {
		t.Errorf("order = %s, want series order", got)
	}
	if s.Patches[0].SeriesLine != 3 || s.Patches[0].Header.Title != "UPSTREAM: 12345: second" {
		t.Errorf("first patch: line %d title %q", s.Patches[0].SeriesLine, s.Patches[0].Header.Title)
	}
	if !strings.HasPrefix(s.Hash, "h1:") {
		t.Fatalf("hash %q", s.Hash)
	}

	// Any byte of any patch, or the order, changes the hash.
	h := s.Hash
	if err := os.WriteFile(filepath.Join(dir, "0001-first.patch"), append(p1, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	s2, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Hash == h {
		t.Error("hash did not change with patch content")
	}
	writeSeries(t, dir, "0001-first.patch\n0002-second.patch\n", nil)
	s3, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s3.Hash == s2.Hash {
		t.Error("hash did not change with series order")
	}
}

func TestLoadErrors(t *testing.T) {
	good := gitPatch(t, map[string]string{"a.go": "package a\n"}, map[string]string{"a.go": "package b\n"}, carrySubject)
	badSubject := gitPatch(t, map[string]string{"a.go": "package a\n"}, map[string]string{"a.go": "package b\n"}, "fix things")
	headerOnly := []byte(strings.SplitN(string(good), "\n---\n", 2)[0] + "\n")
	garbage := append([]byte(strings.SplitN(string(good), "@@", 2)[0]), "@@ -1,2 +1,2 @@\n-package a\n+package b\n"...)

	tests := []struct {
		name    string
		series  string
		patches map[string][]byte
		want    []string
	}{
		{"missing", "0001-a.patch\n0002-b.patch\n", map[string][]byte{"0001-a.patch": good},
			[]string{"series:2: lists 0002-b.patch, which does not exist"}},
		{"unlisted", "0001-a.patch\n", map[string][]byte{"0001-a.patch": good, "0003-c.patch": good},
			[]string{"0003-c.patch: not listed in"}},
		{"duplicate", "0001-a.patch\n#x\n0001-a.patch\n", map[string][]byte{"0001-a.patch": good},
			[]string{"series:3: 0001-a.patch listed twice (first at line 1)"}},
		{"options", "0001-a.patch -p0\n", map[string][]byte{"0001-a.patch": good},
			[]string{"series:1: unsupported options", "0001-a.patch: not listed"}},
		{"bad name", "a.patch\n", map[string][]byte{"a.patch": good},
			[]string{"series:1: patch file name \"a.patch\""}},
		{"no diffs", "0001-a.patch\n", map[string][]byte{"0001-a.patch": headerOnly},
			[]string{"0001-a.patch: malformed patch: contains no diffs"}},
		{"malformed", "0001-a.patch\n", map[string][]byte{"0001-a.patch": garbage},
			[]string{"0001-a.patch: malformed patch: gitdiff: line"}},
		{"subject", "0001-a.patch\n", map[string][]byte{"0001-a.patch": badSubject},
			[]string{"0001-a.patch:4: subject \"fix things\" does not match"}},
		{"several", "0001-a.patch\n0002-b.patch\n", map[string][]byte{"0001-a.patch": badSubject, "0009-z.patch": good},
			[]string{"0001-a.patch:4: subject", "lists 0002-b.patch, which does not exist", "0009-z.patch: not listed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeSeries(t, dir, tt.series, tt.patches)
			_, err := Load(dir)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadMissingSeries(t *testing.T) {
	_, err := Load(t.TempDir())
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want not exist", err)
	}
}

func TestCheckSubject(t *testing.T) {
	for s, ok := range map[string]bool{
		"UPSTREAM: <carry>: copy annotations":             true,
		"UPSTREAM: <drop>: x":                             true,
		"UPSTREAM: 123456: x":                             true,
		"UPSTREAM: revert: <carry>: x":                    true,
		"UPSTREAM: kcp-dev/kubernetes: 42: x":             true,
		"UPSTREAM: carry: x":                              false,
		"<carry>: x":                                      false,
		"UPSTREAM: <carry> missing colon":                 false,
		"upstream: <carry>: lower case is not the format": false,
	} {
		if err := CheckSubject(s); (err == nil) != ok {
			t.Errorf("CheckSubject(%q) = %v, want ok=%v", s, err, ok)
		}
	}
}

func keys(m map[string]string) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

// Without keeps the other patches in order and hashes as a series file
// listing them would: leaving nothing out is the series itself.
func TestWithout(t *testing.T) {
	s := twoPatchSeries(t)
	w, err := s.Without("0001-one.patch")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(w.Names(), ","); got != "0002-two.patch" {
		t.Errorf("Without(0001) names = %s", got)
	}
	if w.Hash == s.Hash || len(s.Patches) != 2 {
		t.Errorf("Without changed the series or kept its hash: %s, %d patches", w.Hash, len(s.Patches))
	}
	same, err := s.Without()
	if err != nil || same.Hash != s.Hash {
		t.Errorf("Without() hash = %q, %v; want the series' %q", same.Hash, err, s.Hash)
	}
}
