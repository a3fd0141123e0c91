package racereport

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Known is the list of races already written up (docs/races.md), by Key.
type Known map[string]string // key -> where it is written up

// LoadKnown reads a known-races file: one Key a line, optionally followed by
// " # " and where it is written up; blank lines and lines starting with #
// are skipped. A line that is not a key (no " <-> ") is an error naming it.
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
		key, note, _ := strings.Cut(l, " # ")
		key = strings.TrimSpace(key)
		if !strings.Contains(key, " <-> ") {
			return nil, fmt.Errorf("%s:%d: %q is not a race key (FUNC <-> FUNC)", path, n, key)
		}
		k[key] = strings.TrimSpace(note)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
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
}

// Judge groups reps and sorts them against the known list.
func (k Known) Judge(reps []Report) Verdict {
	v := Verdict{Reports: reps}
	var rest []Report
	for _, r := range reps {
		if r.InPackages(CarryPackages...) {
			v.OnCarry = append(v.OnCarry, r)
		} else {
			rest = append(rest, r)
		}
	}
	v.Known, v.New = k.Split(GroupByKey(rest))
	return v
}
