package export

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kcp-carry/kcp-carry/pkg/carry/kcppatches"
)

// KCPDir is the directory of --out that receives kcp-patches/, the
// companion change for kcp-dev/kcp.
const KCPDir = "kcp-dev-kcp"

// KCPPatchResult is one exported patch for kcp itself.
type KCPPatchResult struct {
	// File is its path relative to --out (kcp-dev-kcp/0001-....patch).
	File    string   `json:"file"`
	Subject string   `json:"subject"`
	Files   []string `json:"files"`
	// AppliesTo are the kcp trees it was applied to with git am.
	AppliesTo []string `json:"appliesTo,omitempty"`
}

// exportKCPPatches writes root/kcp-patches' patches (git format-patch files
// already) into tmp/kcp-dev-kcp with who as their author and, with signoff,
// its Signed-off-by, after applying the series with git am to a scratch copy
// of each of trees. No kcp-patches/ exports nothing.
func exportKCPPatches(ctx context.Context, root, tmp string, trees []string, who Identity, signoff bool, progress func(format string, args ...any)) ([]KCPPatchResult, error) {
	if _, err := os.Stat(filepath.Join(root, kcppatches.Dir)); errors.Is(err, fs.ErrNotExist) && len(trees) == 0 {
		return nil, nil
	}
	s, err := kcppatches.Load(root)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(root, kcppatches.Dir), err)
	}
	for _, tree := range trees {
		scratch, err := os.MkdirTemp("", "carry-export-kcp-")
		if err != nil {
			return nil, err
		}
		err = kcppatches.ApplyToCopy(ctx, tree, filepath.Join(scratch, "kcp"), s)
		os.RemoveAll(scratch)
		if err != nil {
			return nil, err
		}
		progress("carry export: %d kcp patches apply with git am to %s", len(s.Patches), tree)
	}
	if err := os.MkdirAll(filepath.Join(tmp, KCPDir), 0o755); err != nil {
		return nil, err
	}
	var out []KCPPatchResult
	for _, p := range s.Patches {
		rel := filepath.ToSlash(filepath.Join(KCPDir, p.Name))
		data, err := stampIdentity(p.Data, who, signoff)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Path, err)
		}
		if err := os.WriteFile(filepath.Join(tmp, rel), data, 0o644); err != nil {
			return nil, err
		}
		r := KCPPatchResult{File: rel, Subject: p.Header.Title, AppliesTo: trees}
		r.Files = changedPaths(p.Files)
		out = append(out, r)
	}
	return out, nil
}
