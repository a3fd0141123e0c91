package docs

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/util/markdown"
)

// TargetsHeading is the heading of docs/ci.md's table of every make target.
const TargetsHeading = "Every make target"

// TargetsTableProblems says what docs/ci.md's table under TargetsHeading
// lacks: a row for each of targets (`make` stands for all), each row with
// what it runs and how long it takes.
func TargetsTableProblems(page string, targets []string) []string {
	rows, err := tableUnder(page, TargetsHeading)
	if err != nil {
		return []string{err.Error()}
	}
	var problems, listed []string
	for _, row := range rows {
		// A | inside a cell is written \|.
		inner := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(row), "|"), "|")
		cells := strings.Split(strings.ReplaceAll(inner, `\|`, "¦"), "|")
		if len(cells) != 3 {
			problems = append(problems, fmt.Sprintf("row %q: want 3 cells, the target, what it runs, how long it takes", row))
			continue
		}
		var named []string
		for _, code := range markdown.Parse(cells[0]).Code {
			if code.Text == "make" {
				named = append(named, "all")
			}
			named = append(named, MakeTargetsIn(code.Text)...)
		}
		if len(named) == 0 {
			problems = append(problems, fmt.Sprintf("row %q names no make target", row))
		}
		if strings.TrimSpace(cells[1]) == "" || strings.TrimSpace(cells[2]) == "" {
			problems = append(problems, fmt.Sprintf("row %q: say what it runs and how long it takes (or that it is not measured)", row))
		}
		listed = append(listed, named...)
	}
	for _, target := range targets {
		if !slices.Contains(listed, target) {
			problems = append(problems, fmt.Sprintf("the table under %q has no row for make %s", TargetsHeading, target))
		}
	}
	return problems
}

// tableUnder is the rows of the first table in the section under the
// heading (##), without its header and delimiter rows.
func tableUnder(page, heading string) ([]string, error) {
	_, section, ok := strings.Cut(page, "\n## "+heading+"\n")
	if !ok {
		return nil, fmt.Errorf("no heading %q", "## "+heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "|") {
			rows = append(rows, line)
		} else if len(rows) > 0 {
			break
		}
	}
	if len(rows) < 3 {
		return nil, fmt.Errorf("no table under %q", "## "+heading)
	}
	return rows[2:], nil
}

// READMEMaxLines keeps the README a page a newcomer reads in two minutes.
const READMEMaxLines = 120

// READMEProblems says where the README outgrows its first screen: more
// than READMEMaxLines lines, or a set-up section that names another
// command than `make` and `make test`, which set everything up.
func READMEProblems(readme string) []string {
	var problems []string
	if n := strings.Count(strings.TrimSuffix(readme, "\n"), "\n") + 1; n > READMEMaxLines {
		problems = append(problems, fmt.Sprintf("%d lines; at most %d: move the detail to docs/", n, READMEMaxLines))
	}
	_, setUp, ok := strings.Cut(readme, "\n## Set up\n")
	if !ok {
		return append(problems, `no "## Set up" heading`)
	}
	setUp, _, _ = strings.Cut(setUp, "\n## ")
	// Its commands: every line of its code blocks, and every make in its prose.
	commands := map[string]bool{}
	for _, code := range markdown.Parse(setUp).Code {
		var words []string
		for _, w := range strings.Fields(uncommented(code.Text)) {
			if !strings.Contains(w, "=") { // KCP_SOURCE=<tree> sets a variable, it runs nothing
				words = append(words, w)
			}
		}
		if len(words) > 0 && (code.Block || words[0] == "make") {
			commands[strings.Join(words, " ")] = true
		}
	}
	if len(commands) != 2 || !commands["make"] || !commands["make test"] {
		problems = append(problems, fmt.Sprintf("the set-up section names the commands %q; want make and make test alone", slices.Sorted(maps.Keys(commands))))
	}
	return problems
}
