package pins

import (
	"context"
	"os"
	"path/filepath"

	"golang.org/x/mod/modfile"

	"github.com/kcp-carry/kcp-carry/pkg/util/atomicfile"
)

// GoModCheck says whether a go.mod's pin block matches the one derived from
// the kcp release it requires, and whether it was rewritten.
type GoModCheck struct {
	GoMod string `json:"goMod"`
	KCP   string `json:"kcp"`
	Match bool   `json:"match"`
	// Missing and Extra are replace directives ("old => new version")
	// the derived block has and go.mod lacks, and the other way round.
	Missing []string `json:"missing,omitempty"`
	Extra   []string `json:"extra,omitempty"`
	Marker  string   `json:"marker,omitempty"`
	Written bool     `json:"written"`
	// Diff is the comparison the fields above summarize; Lines shows it.
	Diff *Diff `json:"-"`
}

// CheckGoMod derives the pin block from the kcp release root/go.mod requires
// (fetching kcp with the go command run in root) and compares go.mod's block
// with it; with write, a block that differs is rewritten in place.
func CheckGoMod(ctx context.Context, root string, write bool) (*GoModCheck, error) {
	goModPath := filepath.Join(root, "go.mod")
	data, err := os.ReadFile(goModPath)
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse(goModPath, data, nil)
	if err != nil {
		return nil, err
	}
	kcpVersion, err := KCPVersion(f)
	if err != nil {
		return nil, err
	}
	src, err := Fetch(ctx, root, kcpVersion)
	if err != nil {
		return nil, err
	}
	want, err := Derive(src)
	if err != nil {
		return nil, err
	}
	diff := Check(f, want, kcpVersion)
	res := &GoModCheck{
		GoMod: goModPath, KCP: KCPModule + "@" + kcpVersion, Match: diff.Empty(),
		Missing: replaceStrings(diff.Missing), Extra: replaceStrings(diff.Extra), Marker: diff.Marker,
		Diff: diff,
	}
	if write && !diff.Empty() {
		out, err := Rewrite(goModPath, data, want, kcpVersion)
		if err != nil {
			return nil, err
		}
		if err := atomicfile.Write(goModPath, out, 0o644); err != nil {
			return nil, err
		}
		res.Written = true
	}
	return res, nil
}

func replaceStrings(rs []Replace) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}
