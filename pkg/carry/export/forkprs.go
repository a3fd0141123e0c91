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
// the first line's; each line starts one more, `<name> <module>/<patch
// file>`, which the export writes to --out/kcp-dev-kubernetes-<name>/ with a
// text from fork-pr-<name>.md.tmpl. Without the file the series is one pull
// request.
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
	start, last := 0, ""
	var errs []error
	for _, l := range lines {
		if len(l.Fields) != 2 || !forkPRName.MatchString(l.Fields[0]) {
			errs = append(errs, fmt.Errorf("%s:%d: want <name> <module>/<patch file>, the name in lower case words joined by -", file, l.N))
			continue
		}
		name := l.Fields[0]
		i := patchIndex(all, l.Fields[1])
		switch {
		case i < 0:
			errs = append(errs, fmt.Errorf("%s:%d: %s is no patch of the carry (staging-patches/<module>/series)", file, l.N, l.Fields[1]))
		case i == 0:
			errs = append(errs, fmt.Errorf("%s:%d: %s is the series' first patch, which starts the fix's pull request", file, l.N, l.Fields[1]))
		case i <= start:
			errs = append(errs, fmt.Errorf("%s:%d: %s does not come after %s in the series: list the pull requests in merge order", file, l.N, l.Fields[1], last))
		case slices.ContainsFunc(prs, func(pr *forkPR) bool { return pr.name == name }):
			errs = append(errs, fmt.Errorf("%s:%d: a second pull request named %s", file, l.N, name))
		default:
			prs[len(prs)-1].patches = all[start:i]
			prs = append(prs, &forkPR{name: name, dir: ForkPRDirPrefix + name})
			start, last = i, l.Fields[1]
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	prs[len(prs)-1].patches = all[start:]
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
