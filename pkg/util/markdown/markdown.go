// Package markdown quotes text for the markdown reports (PR.md, evidence/README.md)
// and reads what a markdown page links to and names in code (the docs' checks).
package markdown

import "strings"

// CodeSpan puts s in an inline code span with more backticks than any run in
// s, padded with spaces where s starts or ends with a backtick or is empty.
func CodeSpan(s string) string {
	ticks := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || s == "" {
		return ticks + " " + s + " " + ticks
	}
	return ticks + s + ticks
}

// Fence wraps text in a fenced code block (info string lang, may be empty)
// longer than any backtick run in it.
func Fence(lang, text string) string {
	ticks := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	return ticks + lang + "\n" + text + "\n" + ticks
}

func longestRun(s string, c rune) int {
	best, cur := 0, 0
	for _, r := range s {
		if r == c {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}
