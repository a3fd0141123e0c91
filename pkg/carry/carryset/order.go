package carryset

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/carry/pins"
)

// DependencyOrder orders carried modules for the exported series and for carry verify: a module
// comes after every carried module its pristine go.mod requires (so
// k8s.io/apimachinery before k8s.io/apiserver, and every intermediate
// commit of the exported branch has its dependencies' patches below it);
// modules that do not depend on each other keep their path order. requires
// maps each module to the module paths its go.mod requires; only carried
// modules count. A require cycle is an error naming the modules on it.
func DependencyOrder(requires map[string][]string) ([]string, error) {
	mods := make([]string, 0, len(requires))
	for m := range requires {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	deps := map[string][]string{}
	for _, m := range mods {
		for _, r := range requires[m] {
			if _, carried := requires[r]; carried && r != m && !slices.Contains(deps[m], r) {
				deps[m] = append(deps[m], r)
			}
		}
	}
	var order []string
	placed := map[string]bool{}
	for len(order) < len(mods) {
		progress := false
		for _, m := range mods {
			if placed[m] {
				continue
			}
			ready := true
			for _, d := range deps[m] {
				if !placed[d] {
					ready = false
					break
				}
			}
			if ready {
				order = append(order, m)
				placed[m] = true
				progress = true
				break // restart so the smallest ready path goes next
			}
		}
		if !progress {
			var cycle []string
			for _, m := range mods {
				if !placed[m] && reaches(deps, m, m, map[string]bool{}) {
					cycle = append(cycle, m)
				}
			}
			return nil, fmt.Errorf("carried modules require each other in a cycle (%s); cannot choose which module's patches go first", strings.Join(cycle, ", "))
		}
	}
	return order, nil
}

// reaches reports whether to is reachable from from along deps.
func reaches(deps map[string][]string, from, to string, seen map[string]bool) bool {
	for _, d := range deps[from] {
		if d == to {
			return true
		}
		if !seen[d] {
			seen[d] = true
			if reaches(deps, d, to, seen) {
				return true
			}
		}
	}
	return false
}

// GoModRequires lists the module paths required by the go.mod file at path.
func GoModRequires(path string) ([]string, error) {
	f, err := pins.ReadGoMod(path)
	if err != nil {
		return nil, err
	}
	var reqs []string
	for _, r := range f.Require {
		reqs = append(reqs, r.Mod.Path)
	}
	return reqs, nil
}
