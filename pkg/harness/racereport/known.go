package racereport

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Known is the list of races already written up (docs/races.md), by Key.
type Known map[string]Entry

// Entry is what the known list says of a race.
type Entry struct {
	// Where it is written up, e.g. docs/races.md#its-section.
	Where string
	// FixedBy is the kcp-patches directory whose patch fixes it ("" if none
	// does): on a kcp built from a tree carrying that patch, the race is a
	// failure, not a known race.
	FixedBy string
}

// fixedByField introduces Entry.FixedBy in a line's notes.
const fixedByField = "fixed-by:"

// LoadKnown reads a known-races file: one Key a line, optionally followed by
// notes, each after " # ": where it is written up, and "fixed-by: <dir>".
// Blank lines and lines starting with # are skipped. A line that is not a
// key (no " <-> ") or names no directory after fixed-by: is an error naming
// it.
func LoadKnown(path string) (Known, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	k := Known{}
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		notes := strings.Split(l, " # ")
		key := strings.TrimSpace(notes[0])
		if !strings.Contains(key, " <-> ") {
			return nil, fmt.Errorf("%s:%d: %q is not a race key (FUNC <-> FUNC)", path, n, key)
		}
		var e Entry
		for _, note := range notes[1:] {
			note = strings.TrimSpace(note)
			dir, ok := strings.CutPrefix(note, fixedByField)
			if !ok {
				e.Where = note
				continue
			}
			if e.FixedBy = strings.TrimSpace(dir); e.FixedBy == "" {
				return nil, fmt.Errorf("%s:%d: %s names no kcp-patches directory", path, n, fixedByField)
			}
		}
		k[key] = e
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// Fixes are the directories the entries name as fixed-by, sorted, each once.
func (k Known) Fixes() []string {
	var dirs []string
	for _, e := range k {
		if e.FixedBy != "" && !slices.Contains(dirs, e.FixedBy) {
			dirs = append(dirs, e.FixedBy)
		}
	}
	slices.Sort(dirs)
	return dirs
}

// Split divides groups into those known and those new.
func (k Known) Split(gs []Group) (known, unknown []Group) {
	for _, g := range gs {
		if _, ok := k[g.Key]; ok {
			known = append(known, g)
		} else {
			unknown = append(unknown, g)
		}
	}
	return known, unknown
}

// Verdict sorts a run's reports for the carry's race phase.
type Verdict struct {
	// Reports is every report read.
	Reports []Report
	// OnCarry are the reports with a frame in CarryPackages: the carry must
	// leave none.
	OnCarry []Report
	// Known are the other groups already written up; New those that are not
	// (a finding to write up).
	Known, New []Group
	// Fixed are known groups whose fixed-by patch the build carries: the fix
	// did not hold.
	Fixed []Group
}

// Judge groups reps and sorts them against the known list. carried are the
// kcp-patches directories the kcp that wrote reps was built with: a known
// race one of them fixes is Fixed, not Known.
func (k Known) Judge(reps []Report, carried []string) Verdict {
	v := Verdict{Reports: reps}
	var rest []Report
	for _, r := range reps {
		if r.InPackages(CarryPackages...) {
			v.OnCarry = append(v.OnCarry, r)
		} else {
			rest = append(rest, r)
		}
	}
	known, unknown := k.Split(GroupByKey(rest))
	v.New = unknown
	for _, g := range known {
		if fix := k[g.Key].FixedBy; fix != "" && slices.Contains(carried, fix) {
			v.Fixed = append(v.Fixed, g)
		} else {
			v.Known = append(v.Known, g)
		}
	}
	return v
}
