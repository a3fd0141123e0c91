package pins

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

func TestFromGoMod(t *testing.T) {
	gomod := filepath.Join(t.TempDir(), "go.mod")
	testfs.Write(t, gomod, `module example.com/proj

go 1.22

replace (
	k8s.io/apiserver => github.com/kcp-dev/kubernetes/staging/src/k8s.io/apiserver v0.0.0-20260602065202-e006560fc76a
	k8s.io/local => ../local
)
`)
	pins, err := FromGoMod(gomod, []string{"k8s.io/apiserver"})
	if err != nil {
		t.Fatal(err)
	}
	want := module.Version{Path: "github.com/kcp-dev/kubernetes/staging/src/k8s.io/apiserver", Version: "v0.0.0-20260602065202-e006560fc76a"}
	if pins["k8s.io/apiserver"] != want {
		t.Errorf("pin = %v", pins["k8s.io/apiserver"])
	}
	_, err = FromGoMod(gomod, []string{"k8s.io/local", "k8s.io/none"})
	for _, w := range []string{"go.mod:7: replace k8s.io/local => ../local is a directory replacement", "go.mod: no replace directive for k8s.io/none"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v lacks %q", err, w)
		}
	}
}
