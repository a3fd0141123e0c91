package export

import (
	"context"
	"fmt"
	"os"
	"path"
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

// exportUpstream writes root's upstream-patches/kubernetes as pull requests
// for kubernetes/kubernetes, one per patch of the series, in
// series order, with who as the author of their patches and, with signoff,
// their Signed-off-by, after applying the series with git am to the
// upstream modules it is cut on, fetched through the module proxy and laid
// out at their staging paths. The last pull request goes to
// tmp/kubernetes-kubernetes/, each one it needs before it to
// tmp/kubernetes-kubernetes-<module's last element>/ (its text from
// kubernetes-pr-<that element>.md.tmpl). No upstream-patches/ exports
// nothing.
func exportUpstream(ctx context.Context, root, tmp string, who Identity, signoff bool, progress func(format string, args ...any)) (last *UpstreamPRResult, before []UpstreamPRResult, err error) {
	pr, err := upstreampatches.Load(root)
	if err != nil || pr == nil {
		return nil, nil, err
	}
	groups, err := upstreamGroups(pr)
	if err != nil {
		return nil, nil, err
	}
	scratch, err := os.MkdirTemp("", "carry-export-upstream-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(scratch)
	if _, err := upstreampatches.ApplyToCopy(ctx, pr, filepath.Join(scratch, "kubernetes")); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", pr.Dir, err)
	}
	var base, dirs []string
	for _, m := range pr.Base {
		base = append(base, m.String())
		dirs = append(dirs, m.StagingDir())
	}
	progress("carry export: %s/%s applies with git am to %s at %s", upstreampatches.Dir, upstreampatches.Kubernetes, strings.Join(base, ", "), strings.Join(dirs, ", "))
	for i, g := range groups {
		dir := UpstreamDir
		if i < len(groups)-1 {
			dir = UpstreamDir + "-" + path.Base(g.module)
		}
		patches, err := writeSeries(tmp, dir, &series.Series{Dir: pr.Series.Dir, Patches: g.patches}, base, who, signoff)
		if err != nil {
			return nil, nil, err
		}
		r := UpstreamPRResult{Module: g.module, Dir: dir, PR: dir + "/" + PRFile, Title: patches[len(patches)-1].Subject, Base: base, Patches: patches}
		if i < len(groups)-1 {
			before = append(before, r)
		} else {
			last = &r
		}
	}
	return last, before, nil
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
