package export

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
)

// TestSplitForkPRsAcrossModules: a later pull request may start in several
// modules (the detector's client-go change, below the apiserver in the
// series, and its cacher patches); the fix's keeps the rest of each.
func TestSplitForkPRsAcrossModules(t *testing.T) {
	clientGo := &carried{in: &carryset.Carried{Module: "k8s.io/client-go"}}
	apiserver := &carried{in: &carryset.Carried{Module: "k8s.io/apiserver"}}
	patch := func(mod *carried, name string) *exported {
		return &exported{mod: mod, carried: &series.Patch{Name: name}}
	}
	all := []*exported{
		patch(clientGo, "0001-backoff.patch"),
		patch(apiserver, "0001-nil-cluster.patch"), patch(apiserver, "0002-copy.patch"),
		patch(apiserver, "0003-tests.patch"), patch(apiserver, "0004-detector.patch"),
	}
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, ForkPRsFile), "detector k8s.io/client-go/0001-backoff.patch\ndetector k8s.io/apiserver/0003-tests.patch\n")
	prs, err := splitForkPRs(dir, all)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, pr := range prs {
		var names []string
		for _, e := range pr.patches {
			names = append(names, e.mod.in.Module+"/"+e.carried.Name)
		}
		got = append(got, names)
	}
	want := [][]string{
		{"k8s.io/apiserver/0001-nil-cluster.patch", "k8s.io/apiserver/0002-copy.patch"},
		{"k8s.io/client-go/0001-backoff.patch", "k8s.io/apiserver/0003-tests.patch", "k8s.io/apiserver/0004-detector.patch"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) || prs[1].name != "detector" {
		t.Errorf("pull requests = %q, want %q", got, want)
	}
}
