package export

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/carry/kcppatches"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
)

// KCPDir is the directory of --out that receives kcp-patches/, the
// companion pull requests for kcp-dev/kcp, one directory each.
const KCPDir = "kcp-dev-kcp"

// KCPPRResult is one exported pull request for kcp itself, in
// --out/kcp-dev-kcp/<its kcp-patches/ directory>.
type KCPPRResult struct {
	// Dir is its directory relative to --out (kcp-dev-kcp/1-pin-bump).
	Dir  string `json:"dir"`
	Name string `json:"name"`
	// PR is its PR.md relative to --out. Generic says the text was built
	// from the commit messages: no template for this pull request yet.
	PR      string           `json:"pr"`
	Generic bool             `json:"generic,omitempty"`
	Patches []KCPPatchResult `json:"patches"`
	// Appendix is its APPENDIX.md relative to --out, the detail its text
	// leaves to the pull request's first comment; "" for none.
	Appendix string `json:"appendix,omitempty"`
	// Backports are its forms for kcp release branches its patches do not
	// apply to, each in <Dir>/<branch>/.
	Backports []KCPBackportResult `json:"backports,omitempty"`
	// Earlier are the kcp pull requests that merge before it, by the name
	// of their kcp-patches/ directory without the number (bump-k8s-script):
	// the subject of their first patch, or, for one without patches (a pin
	// bump of kcp's script), that name. Its text names those it needs.
	Earlier map[string]string `json:"-"`
}

// KCPBackportResult is a kcp pull request's form for a release branch.
type KCPBackportResult struct {
	Branch  string           `json:"branch"`
	Patches []KCPPatchResult `json:"patches"`
}

// KCPPatchResult is one exported patch for kcp itself, or for Kubernetes
// (UpstreamPRResult).
type KCPPatchResult struct {
	// File is its path relative to --out (kcp-dev-kcp/1-pin-bump/0001-....patch).
	File    string   `json:"file"`
	Subject string   `json:"subject"`
	Files   []string `json:"files"`
	// AppliesTo are what it was applied to with git am: the kcp trees, or
	// the upstream modules.
	AppliesTo []string `json:"appliesTo,omitempty"`
	// Body is the commit message below the subject.
	Body string `json:"-"`
}

// checkKCPTrees applies kcp-patches/, every pull request in merge order,
// with git am to a scratch copy of each of trees, and returns the trees each
// form of each pull request applied to.
func checkKCPTrees(ctx context.Context, src *sources, trees []string, progress func(format string, args ...any)) (map[*series.Series][]string, error) {
	appliesTo := map[*series.Series][]string{}
	for _, tree := range trees {
		scratch, err := os.MkdirTemp("", "carry-export-kcp-")
		if err != nil {
			return nil, err
		}
		forms, err := kcppatches.ApplyToCopyForms(ctx, tree, filepath.Join(scratch, "kcp"), src.kcp)
		os.RemoveAll(scratch)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, form := range forms {
			appliesTo[form] = append(appliesTo[form], tree)
			rel, err := filepath.Rel(filepath.Join(src.root, kcppatches.Dir), form.Dir)
			if err != nil {
				return nil, err
			}
			names = append(names, filepath.ToSlash(rel))
		}
		progress("carry export: %s (%s) applies with git am to %s", kcppatches.Dir, strings.Join(names, ", "), tree)
	}
	return appliesTo, nil
}

// writeSeries writes the patches of s into tmp/dir with who as their
// author and, with signoff, its Signed-off-by; trees are what they applied
// to.
func writeSeries(tmp, dir string, s *series.Series, trees []string, who Identity, signoff bool) ([]KCPPatchResult, error) {
	if err := os.MkdirAll(filepath.Join(tmp, dir), 0o755); err != nil {
		return nil, err
	}
	var out []KCPPatchResult
	for _, p := range s.Patches {
		rel := dir + "/" + p.Name
		data, err := stampIdentity(p.Data, who, signoff)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Path, err)
		}
		if err := os.WriteFile(filepath.Join(tmp, rel), data, 0o644); err != nil {
			return nil, err
		}
		out = append(out, KCPPatchResult{File: rel, Subject: p.Header.Title, Files: changedPaths(p.Files), AppliesTo: trees, Body: p.Header.Body})
	}
	return out, nil
}
