package carryset

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

func TestCarriedModules(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "k8s.io/apiserver/series"), "")
	testfs.Write(t, filepath.Join(dir, "k8s.io/apimachinery/series"), "")
	testfs.Write(t, filepath.Join(dir, "k8s.io/apimachinery/README"), "")
	testfs.Write(t, filepath.Join(dir, "notes/README"), "")
	mods, err := CarriedModules(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(mods, ",") != "k8s.io/apimachinery,k8s.io/apiserver" {
		t.Errorf("CarriedModules = %v", mods)
	}

	testfs.Write(t, filepath.Join(dir, "k8s.io/apiserver/sub/series"), "")
	if _, err := CarriedModules(dir); err == nil || !strings.Contains(err.Error(), "carries both k8s.io/apiserver and the nested module k8s.io/apiserver/sub") {
		t.Errorf("nested modules: %v", err)
	}

	bad := t.TempDir()
	testfs.Write(t, filepath.Join(bad, "Not A Module/series"), "")
	if _, err := CarriedModules(bad); err == nil || !strings.Contains(err.Error(), "does not name a module path") {
		t.Errorf("bad module path: %v", err)
	}
}
