package export

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
)

// ForkPRsFile, in staging-patches/, splits the fork's series into pull
// requests, in merge order. The first, the fix's, holds the patches before
// the later ones'; each line starts one more, or the same one in another
// module, `<name> <module>/<patch file>`: that patch and the module's
// patches after it, up to the next pull request's start in the module. The
// export writes each later one to --out/kcp-dev-kubernetes-<name>/ with a
// text from fork-pr-<name>.md.tmpl, its patches in the series' module
// order. Without the file the series is one pull request.
const ForkPRsFile = "pull-requests"

// ForkPRDirPrefix is the prefix of a further fork pull request's directory
// in --out.
const ForkPRDirPrefix = "kcp-dev-kubernetes-"

// ForkPRResult is one of the fork's pull requests after the fix's.
type ForkPRResult struct {
	Name string `json:"name"`
	// Dir is its directory relative to --out (kcp-dev-kubernetes-detector),
	// PR its text there and Title its title, its last patch's subject.
	Dir   string `json:"dir"`
	PR    string `json:"pr"`
	Title string `json:"title"`
	// Patches are its patches, their File relative to --out.
	Patches []PatchResult `json:"patches"`
}

// forkPR is one of the fork's pull requests during the export: the fix's
// (name "", written at the top of --out) or a later one.
type forkPR struct {
	name, dir string
	patches   []*exported
}

var forkPRName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// splitForkPRs splits all, the carry's patches in export order, into the
// fork's pull requests that patchesDir/ForkPRsFile declares.
func splitForkPRs(patchesDir string, all []*exported) ([]*forkPR, error) {
	file := filepath.Join(patchesDir, ForkPRsFile)
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return []*forkPR{{patches: all}}, nil
	}
	if err != nil {
		return nil, err
	}
	lines, err := series.Lines(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	prs := []*forkPR{{}}
	// starts[module] are the indexes in all of the module's patches that
	// start a later pull request, with the pull request's index in prs.
	type start struct{ patch, pr int }
	starts := map[string][]start{}
	last := map[string]string{}
	var errs []error
	for _, l := range lines {
		if len(l.Fields) != 2 || !forkPRName.MatchString(l.Fields[0]) {
			errs = append(errs, fmt.Errorf("%s:%d: want <name> <module>/<patch file>, the name in lower case words joined by -", file, l.N))
			continue
		}
		name := l.Fields[0]
		i := patchIndex(all, l.Fields[1])
		if i < 0 {
			errs = append(errs, fmt.Errorf("%s:%d: %s is no patch of the carry (staging-patches/<module>/series)", file, l.N, l.Fields[1]))
			continue
		}
		mod := all[i].mod.in.Module
		same := prs[len(prs)-1].name == name
		module := starts[mod]
		switch {
		case !same && slices.ContainsFunc(prs, func(pr *forkPR) bool { return pr.name == name }):
			errs = append(errs, fmt.Errorf("%s:%d: a second pull request named %s", file, l.N, name))
		case same && len(module) > 0 && module[len(module)-1].pr == len(prs)-1:
			errs = append(errs, fmt.Errorf("%s:%d: the pull request %s starts twice in %s", file, l.N, name, mod))
		case len(module) > 0 && i <= module[len(module)-1].patch:
			errs = append(errs, fmt.Errorf("%s:%d: %s does not come after %s in the series: list the pull requests in merge order", file, l.N, l.Fields[1], last[mod]))
		default:
			if !same {
				prs = append(prs, &forkPR{name: name, dir: ForkPRDirPrefix + name})
			}
			starts[mod] = append(module, start{patch: i, pr: len(prs) - 1})
			last[mod] = l.Fields[1]
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for i, e := range all {
		pr := 0
		for _, s := range starts[e.mod.in.Module] {
			if s.patch <= i {
				pr = s.pr
			}
		}
		prs[pr].patches = append(prs[pr].patches, e)
	}
	if len(prs[0].patches) == 0 {
		return nil, fmt.Errorf("%s: the later pull requests start at the series' first patches, which leaves the fix's pull request none", file)
	}
	return prs, nil
}

// patchIndex is the index in all of the patch named <module>/<patch file>,
// or -1.
func patchIndex(all []*exported, name string) int {
	slash := strings.LastIndex(name, "/")
	return slices.IndexFunc(all, func(e *exported) bool {
		return slash > 0 && e.mod.in.Module == name[:slash] && e.carried.Name == name[slash+1:]
	})
}

// title is the pull request's title: its last patch's subject.
func (pr *forkPR) title() string { return pr.patches[len(pr.patches)-1].res.Subject }

// result is what Run reports of a later pull request.
func (pr *forkPR) result() ForkPRResult {
	r := ForkPRResult{Name: pr.name, Dir: pr.dir, PR: pr.dir + "/" + PRFile, Title: pr.title()}
	for _, e := range pr.patches {
		r.Patches = append(r.Patches, e.res)
	}
	return r
}
