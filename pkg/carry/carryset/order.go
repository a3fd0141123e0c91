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

// OrderByGoMod orders items, one per carried module (module names it), in
// DependencyOrder of the go.mod file at goMod(item): the order export and
// verify apply the carry in. requires maps each module to the other carried
// modules its go.mod requires, sorted. A go.mod that cannot be read is an
// error naming the module.
func OrderByGoMod[T any](items []T, module, goMod func(T) string) (ordered []T, requires map[string][]string, err error) {
	all := map[string][]string{}
	byName := map[string]T{}
	for _, it := range items {
		reqs, err := GoModRequires(goMod(it))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: reading its go.mod: %w", module(it), err)
		}
		all[module(it)] = reqs
		byName[module(it)] = it
	}
	order, err := DependencyOrder(all)
	if err != nil {
		return nil, nil, err
	}
	requires = map[string][]string{}
	for mod, reqs := range all {
		for _, r := range reqs {
			if _, carried := byName[r]; carried && r != mod && !slices.Contains(requires[mod], r) {
				requires[mod] = append(requires[mod], r)
			}
		}
		sort.Strings(requires[mod])
	}
	for _, name := range order {
		ordered = append(ordered, byName[name])
	}
	return ordered, requires, nil
}
