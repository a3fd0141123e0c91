package export

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"golang.org/x/mod/module"
)

// Location is where a module lives in its fork's git repository.
type Location struct {
	// Repo is the repository as a Go import path prefix, e.g.
	// github.com/kcp-dev/kubernetes.
	Repo string `json:"repo"`
	// Dir is the module's directory inside the repository, slash-separated
	// and without a trailing slash; "" is the repository root.
	Dir string `json:"dir"`
}

// stagingSep is the Kubernetes staging layout: module M of repository R is
// published as R/staging/src/M and kept in R's directory staging/src/M.
const stagingSep = "/staging/src/"

var majorSuffixRE = regexp.MustCompile(`^v[0-9]+$`)

// Locate maps the module path a go.mod replace directive points at (the
// fork module, for example
// github.com/kcp-dev/kubernetes/staging/src/k8s.io/apimachinery) to the
// repository and directory holding it:
//
//  1. R/staging/src/M is directory staging/src/M of repository R (the
//     layout of Kubernetes and of kcp's fork of it);
//  2. github.com/OWNER/NAME[/DIR] is directory DIR of github.com/OWNER/NAME,
//     except that a lone major-version suffix (/v2) is the repository root;
//  3. any other path is the root of a repository of that name (so the fork
//     root, github.com/kcp-dev/kubernetes for k8s.io/kubernetes, maps to the
//     repository root).
func Locate(forkPath string) (Location, error) {
	if err := module.CheckPath(forkPath); err != nil {
		return Location{}, fmt.Errorf("fork module path %q: %w", forkPath, err)
	}
	if repo, mod, ok := strings.Cut(forkPath, stagingSep); ok {
		return Location{Repo: repo, Dir: strings.TrimPrefix(stagingSep, "/") + mod}, nil
	}
	if elems := strings.Split(forkPath, "/"); elems[0] == "github.com" && len(elems) >= 3 {
		dir := path.Join(elems[3:]...)
		if majorSuffixRE.MatchString(dir) {
			dir = ""
		}
		return Location{Repo: path.Join(elems[:3]...), Dir: dir}, nil
	}
	return Location{Repo: forkPath}, nil
}

// Revision returns the commit (or tag) a module version stands for: the
// revision of a pseudo-version (v0.0.0-20260602065202-e006560fc76a is
// e006560fc76a), else the version itself, which then names a tag.
func Revision(version string) string {
	if module.IsPseudoVersion(version) {
		if rev, err := module.PseudoVersionRev(version); err == nil {
			return rev
		}
	}
	return version
}

// dirPrefix is dir as a path prefix ("" for the root).
func dirPrefix(dir string) string {
	if dir == "" {
		return ""
	}
	return dir + "/"
}
