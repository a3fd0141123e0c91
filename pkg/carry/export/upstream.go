package export

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/carry/upstreampatches"
)

// UpstreamDir is the directory of --out that receives the pull request for
// kubernetes/kubernetes, upstream-patches/kubernetes: its patches, by the
// submitter, and its PR.md, in Kubernetes' template.
const UpstreamDir = "kubernetes-kubernetes"

// UpstreamPRResult is an exported pull request for kubernetes/kubernetes.
type UpstreamPRResult struct {
	// Module is the staging module its patches change.
	Module string `json:"module"`
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

// checkUpstream applies upstream-patches/kubernetes with git am to the
// upstream modules it is cut on, fetched through the module proxy and laid
// out at their staging paths, and returns those modules (module@version).
// Its pull requests are one per patch of the series, in series order: the
// last goes to kubernetes-kubernetes/, each one it needs before it to
// kubernetes-kubernetes-<module's last element>/ (its text from
// kubernetes-pr-<that element>.md.tmpl).
func checkUpstream(ctx context.Context, src *sources, progress func(format string, args ...any)) ([]string, error) {
	pr := src.upstream
	if pr == nil {
		return nil, nil
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
	return base, nil
}

// upstreamGroup is the patches of one Kubernetes pull request.
type upstreamGroup struct {
	module  string
	patches []*series.Patch
}

// upstreamGroups makes each patch of pr's series a pull request of its own,
// named after the staging module of its first file (the cacher's pull
// request also adds the client-go constructor it uses): a file outside the
// base modules is an error naming the patch.
func upstreamGroups(pr *upstreampatches.PR) ([]upstreamGroup, error) {
	var groups []upstreamGroup
	for _, p := range pr.Series.Patches {
		mod := ""
		for _, f := range p.Files {
			name := f.NewName
			if f.IsDelete {
				name = f.OldName
			}
			i := slices.IndexFunc(pr.Base, func(m upstreampatches.Module) bool { return strings.HasPrefix(name, m.StagingDir()+"/") })
			if i < 0 {
				return nil, fmt.Errorf("%s: %s lies in none of the base modules", p.Path, name)
			}
			if mod == "" {
				mod = pr.Base[i].Path
			}
		}
		if slices.ContainsFunc(groups, func(g upstreamGroup) bool { return g.module == mod }) {
			return nil, fmt.Errorf("%s: a second pull request named after %s: its directory and text would be the first one's", p.Path, mod)
		}
		groups = append(groups, upstreamGroup{module: mod, patches: []*series.Patch{p}})
	}
	return groups, nil
}
