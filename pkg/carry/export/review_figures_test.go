package export

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The fifth review: a kcp text (kcp's pull requests, the fork's, the issue,
// an appendix) is short as GitHub shows it, and every number in it stands
// beside the command that gives it.
const (
	// maxRenderedLines is how long a kcp text may be as GitHub shows it.
	maxRenderedLines = 60
	// wrapWidth is how many characters GitHub shows on a line of a pull
	// request's text, about.
	wrapWidth = 100
)

// renderedLines counts the lines GitHub shows of a markdown text at
// wrapWidth characters a line: one for each line of a code block and each
// table row (they scroll), one for each wrapWidth characters begun of any
// other line, blank lines included.
func renderedLines(text string) int {
	n, fenced := 0, false
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			fenced = !fenced
			n++
		case fenced, strings.HasPrefix(trimmed, "|"), trimmed == "":
			n++
		default:
			n += (len([]rune(line)) + wrapWidth - 1) / wrapWidth
		}
	}
	return n
}

// mdBlock is a block of a markdown text, as figureProblems reads it: a
// fenced code block (code), a paragraph, a list item (with the lines
// indented under it, nested code blocks included), a table or a heading.
type mdBlock struct {
	kind  string // "code", "paragraph", "item", "table", "heading"
	lines []string
	// list numbers the list an item belongs to (0: none).
	list int
	// command says the block gives a command: a code block of commands, or
	// a block with a command in a code span or a nested code block.
	command bool
}

var (
	listMarker = regexp.MustCompile(`^([-*]|\d+\.)\s`)
	// envAssign is a shell variable assignment before a command.
	envAssign = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	// commandWords are what a command line a text gives may start with:
	// the tools kcp's texts use, and Prow's commands.
	commandWords = []string{"make", "go", "git", "grep", "kubectl", "curl", "cd", "bash", "file", "jq", "env", "/test", "/cherry-pick"}
	// notFigures are numbers that are names, not measurements: a commit,
	// a date.
	notFigures = regexp.MustCompile(`^([0-9a-f]{7,40}|[0-9]{4}-[0-9]{2}-[0-9]{2})$`)
	// codeInfoCommands are the info strings of code blocks of commands.
	codeInfoCommands = []string{"sh", "bash", "shell", "console"}
)

// isCommand says whether a line of a code block or a code span is a command
// a reader runs: after any VAR=value, one of commandWords or one of kcp's
// hack/ scripts.
func isCommand(s string) bool {
	fields := strings.Fields(s)
	for len(fields) > 0 && envAssign.MatchString(fields[0]) {
		fields = fields[1:]
	}
	if len(fields) == 0 {
		return false
	}
	return slices.Contains(commandWords, fields[0]) || kcpScript.MatchString(fields[0])
}

// mdBlocks splits a markdown text into blocks.
func mdBlocks(text string) []mdBlock {
	var blocks []mdBlock
	var cur *mdBlock
	flush := func() {
		if cur != nil {
			blocks = append(blocks, *cur)
			cur = nil
		}
	}
	fenced, fenceInfo, nested := false, "", false
	list, lastWasItem := 0, false
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if fenced {
			if strings.HasPrefix(trimmed, "```") {
				fenced = false
				if !nested {
					flush()
				}
				continue
			}
			if !nested { // a nested block's lines are the item's command, not its prose
				cur.lines = append(cur.lines, line)
			}
			if slices.Contains(codeInfoCommands, fenceInfo) || (fenceInfo == "" && isCommand(trimmed)) {
				cur.command = cur.command || cur.kind == "code" || nested
			}
			continue
		}
		indented := strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")
		switch {
		case strings.HasPrefix(trimmed, "```"):
			fenced, fenceInfo = true, strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
			nested = cur != nil && cur.kind == "item" && indented
			if !nested {
				flush()
				kind := "code"
				if fenceInfo == "release-note" || fenceInfo == "docs" {
					kind = "paragraph" // prose in a fence
				}
				cur = &mdBlock{kind: kind}
				lastWasItem = false
			}
		case trimmed == "":
			flush()
		case !indented && listMarker.MatchString(trimmed):
			flush()
			if !lastWasItem {
				list++
			}
			cur = &mdBlock{kind: "item", list: list, lines: []string{listMarker.ReplaceAllString(trimmed, "")}}
			lastWasItem = true
		case cur != nil && cur.kind == "item" && indented:
			cur.lines = append(cur.lines, trimmed)
		case strings.HasPrefix(trimmed, "#"):
			flush()
			blocks = append(blocks, mdBlock{kind: "heading", lines: []string{trimmed}})
			lastWasItem = false
		case strings.HasPrefix(trimmed, "|"):
			if cur == nil || cur.kind != "table" {
				flush()
				cur = &mdBlock{kind: "table"}
			}
			cur.lines = append(cur.lines, trimmed)
			lastWasItem = false
		default:
			if cur == nil || cur.kind != "paragraph" {
				flush()
				cur = &mdBlock{kind: "paragraph"}
				lastWasItem = false
			}
			cur.lines = append(cur.lines, trimmed)
		}
	}
	flush()
	for i := range blocks {
		b := &blocks[i]
		if b.kind == "code" {
			continue
		}
		for _, line := range b.lines {
			spans := strings.Split(line, "`")
			for j := 1; j < len(spans); j += 2 {
				if isCommand(spans[j]) {
					b.command = true
				}
			}
		}
	}
	return blocks
}

// figures are the numbers of a block's prose: words that begin with a
// digit, outside code spans and link targets, but for commits and dates.
func figures(b mdBlock) []string {
	var out []string
	for _, line := range b.lines {
		spans := strings.Split(line, "`")
		for j := 0; j < len(spans); j += 2 {
			prose := markdownLink.ReplaceAllString(spans[j], "]")
			for _, word := range strings.Fields(prose) {
				word = strings.Trim(word, "()[]{},;:*_\"'!?")
				word = strings.TrimSuffix(word, ".")
				if word == "" || word[0] < '0' || word[0] > '9' || notFigures.MatchString(word) {
					continue
				}
				out = append(out, word)
			}
		}
	}
	return out
}

// figureProblems names every figure of a text that is not beside its
// command: beside means in a block that gives a command (a code block of
// commands, a code span that is one), or in a paragraph or table next to a
// code block of commands, or in a list next to one (a list's items count as
// one block). Figures inside code are the command's own.
func figureProblems(text string) []string {
	blocks := mdBlocks(text)
	codeAt := func(i int) bool { return i >= 0 && i < len(blocks) && blocks[i].kind == "code" && blocks[i].command }
	var problems []string
	for i, b := range blocks {
		if b.kind == "code" || b.command {
			continue
		}
		figs := figures(b)
		if len(figs) == 0 {
			continue
		}
		prev, next := i-1, i+1
		if b.kind == "item" {
			for prev >= 0 && blocks[prev].kind == "item" && blocks[prev].list == b.list {
				prev--
			}
			for next < len(blocks) && blocks[next].kind == "item" && blocks[next].list == b.list {
				next++
			}
		}
		if codeAt(prev) || codeAt(next) {
			continue
		}
		first := strings.Join(b.lines, " ")
		if len(first) > 80 {
			first = first[:80] + "..."
		}
		problems = append(problems, fmt.Sprintf("gives %s without the command that measures it (in the same paragraph, list or table, or a code block next to it): %q", strings.Join(figs, ", "), first))
	}
	return problems
}

// kcpTextLengthProblems is the fifth review for a kcp text: at most
// maxRenderedLines lines as GitHub shows it, and every figure beside its
// command.
func kcpTextLengthProblems(text string) []string {
	var problems []string
	if n := renderedLines(text); n > maxRenderedLines {
		problems = append(problems, fmt.Sprintf("shows as %d lines at %d characters a line, want at most %d", n, wrapWidth, maxRenderedLines))
	}
	return append(problems, figureProblems(text)...)
}
