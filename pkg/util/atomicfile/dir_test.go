package atomicfile

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

// leftovers lists what ReplaceDir or TempDirFor left beside dst.
func leftovers(t *testing.T, dst string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestReplaceDir(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "parent", "out")
	for i, files := range []map[string]string{
		{"a.txt": "first", "sub/b.txt": "first"},
		{"c.txt": "second"}, // replaces an existing tree as a whole
	} {
		tmp, err := TempDirFor(dst)
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(tmp); err != nil || fi.Mode().Perm() != 0o755 || filepath.Dir(tmp) != filepath.Dir(dst) {
			t.Fatalf("TempDirFor = %s, %v, %v", tmp, fi.Mode(), err)
		}
		testfs.WriteTree(t, tmp, files)
		if err := ReplaceDir(tmp, dst); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if got := testfs.ReadTree(t, dst); !maps.Equal(got, files) {
			t.Errorf("run %d: %s = %v, want %v", i, dst, got, files)
		}
		if left := leftovers(t, dst); len(left) > 0 {
			t.Errorf("run %d left %v", i, left)
		}
	}
}

// TestReplaceDirFailureKeepsOld: when the new tree cannot be moved in, the
// previous directory is back in place, whole, and nothing else remains.
func TestReplaceDirFailureKeepsOld(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "out")
	old := map[string]string{"a.txt": "old", "sub/b.txt": "old"}
	testfs.WriteTree(t, dst, old)
	tmp, err := TempDirFor(dst)
	if err != nil {
		t.Fatal(err)
	}
	// The new tree vanished (a failed build cleaned it up, say): the rename
	// into place fails after the old tree was moved aside.
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
	err = ReplaceDir(tmp, dst)
	if err == nil || !strings.Contains(err.Error(), tmp) {
		t.Fatalf("ReplaceDir of a missing directory: %v", err)
	}
	if got := testfs.ReadTree(t, dst); !maps.Equal(got, old) {
		t.Errorf("%s after the failure = %v, want %v", dst, got, old)
	}
	if left := leftovers(t, dst); len(left) > 0 {
		t.Errorf("left %v", left)
	}
}
