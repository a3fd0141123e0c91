package export

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/carry/upstreampatches"
)

// UpstreamDir is the directory of --out that receives the pull request for
// kubernetes/kubernetes, upstream-patches/kubernetes: its patches, by the
// submitter, and its PR.md, in Kubernetes' template.
const UpstreamDir = "kubernetes-kubernetes"

// UpstreamPRResult is the exported pull request for kubernetes/kubernetes.
type UpstreamPRResult struct {
	// Dir is its directory relative to --out, PR its text there and Title
	// its title, its last patch's subject.
	Dir   string `json:"dir"`
	PR    string `json:"pr"`
	Title string `json:"title"`
	// Base are the upstream modules its patches applied to with git am,
	// module@version, each at staging/src/<module>.
	Base    []string         `json:"base"`
	Patches []KCPPatchResult `json:"patches"`
}

// exportUpstream writes root's upstream-patches/kubernetes into
// tmp/kubernetes-kubernetes/ with who as the author of its patches and, with
// signoff, their Signed-off-by, after applying them with git am to the
// upstream modules they are cut on, fetched through the module proxy and
// laid out at their staging paths. No upstream-patches/ exports nothing.
func exportUpstream(ctx context.Context, root, tmp string, who Identity, signoff bool, progress func(format string, args ...any)) (*UpstreamPRResult, error) {
	pr, err := upstreampatches.Load(root)
	if err != nil || pr == nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp("", "carry-export-upstream-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	if _, err := upstreampatches.ApplyToCopy(ctx, pr, filepath.Join(scratch, "kubernetes")); err != nil {
		return nil, fmt.Errorf("%s: %w", pr.Dir, err)
	}
	var base, dirs []string
	for _, m := range pr.Base {
		base = append(base, m.String())
		dirs = append(dirs, m.StagingDir())
	}
	progress("carry export: %s/%s applies with git am to %s at %s", upstreampatches.Dir, upstreampatches.Kubernetes, strings.Join(base, ", "), strings.Join(dirs, ", "))
	patches, err := writeSeries(tmp, UpstreamDir, pr.Series, base, who, signoff)
	if err != nil {
		return nil, err
	}
	return &UpstreamPRResult{Dir: UpstreamDir, PR: UpstreamDir + "/" + PRFile, Title: patches[len(patches)-1].Subject, Base: base, Patches: patches}, nil
}
