package pins

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"

	"golang.org/x/mod/module"
)

// TreePin is one carried module's pin in a kcp tree next to the pin the
// carry was made for (the repository's go.mod).
type TreePin struct {
	Module string `json:"module"`
	// Tree and Carry are the fork versions ("path@version").
	Tree  string `json:"tree"`
	Carry string `json:"carry"`
	// TreeCommit and CarryCommit are the fork commits their pseudo-versions
	// name ("" for a tagged version).
	TreeCommit  string `json:"treeCommit,omitempty"`
	CarryCommit string `json:"carryCommit,omitempty"`
	Match       bool   `json:"match"`
}

// TreeCheck says whether a kcp tree pins every carried module where the
// repository's go.mod does.
type TreeCheck struct {
	Tree  string    `json:"tree"`
	Pins  []TreePin `json:"pins"`
	Match bool      `json:"match"`
}

// CheckTree compares, for every carried module, the fork version tree/go.mod
// pins with the one the carry was made for (ours: the repository's go.mod).
func CheckTree(tree string, ours map[string]module.Version) (*TreeCheck, error) {
	carried := slices.Sorted(maps.Keys(ours))
	theirs, err := FromGoMod(filepath.Join(tree, "go.mod"), carried)
	if err != nil {
		return nil, fmt.Errorf("kcp tree %s: %w", tree, err)
	}
	c := &TreeCheck{Tree: tree, Match: true}
	for _, mod := range carried {
		p := TreePin{Module: mod, Tree: versionString(theirs[mod]), Carry: versionString(ours[mod]),
			TreeCommit: commitOf(theirs[mod]), CarryCommit: commitOf(ours[mod]), Match: theirs[mod] == ours[mod]}
		c.Match = c.Match && p.Match
		c.Pins = append(c.Pins, p)
	}
	sort.Slice(c.Pins, func(i, j int) bool { return c.Pins[i].Module < c.Pins[j].Module })
	return c, nil
}

// Lines describe each pin, then, when one differs, the refusal.
func (c *TreeCheck) Lines() []string {
	var lines []string
	for _, p := range c.Pins {
		if p.Match {
			lines = append(lines, fmt.Sprintf("%s: %s pins %s (%s), the one the carry was made for", p.Module, c.Tree, p.Tree, commitNote(p.TreeCommit)))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: %s pins %s (%s), but the carry was made for %s (%s)",
			p.Module, c.Tree, p.Tree, commitNote(p.TreeCommit), p.Carry, commitNote(p.CarryCommit)))
	}
	if !c.Match {
		lines = append(lines, "refusing: the carry's patches were written and tested against the other commit. Move the carry to this tree's pin first: "+
			"replace go.mod's pins with the tree's (`carry pins --write` after bumping kcp), `carry overlay`, fix what no longer applies under .overlay/, then `carry refresh` (CONTRIBUTING.md, \"Bumping kcp\")")
	}
	return lines
}

func versionString(v module.Version) string { return v.Path + "@" + v.Version }

func commitOf(v module.Version) string {
	if !module.IsPseudoVersion(v.Version) {
		return ""
	}
	rev, err := module.PseudoVersionRev(v.Version)
	if err != nil {
		return ""
	}
	return rev
}

func commitNote(commit string) string {
	if commit == "" {
		return "a tagged version"
	}
	return "fork commit " + commit
}
