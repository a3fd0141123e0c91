package markdown

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Document is what a markdown text says that a reader follows: the anchors
// of its headings, its link targets and its code, each in the order written.
// Parse reads the subset of GitHub markdown the repository's pages use
// (ATX headings, inline links, code spans, fenced blocks), not all of it.
type Document struct {
	// Anchors are the headings' anchors as GitHub makes them (Slugs).
	Anchors []string
	// Links are the targets of inline links outside code, as written.
	Links []Ref
	// Code is every code span's text and every line of a fenced block.
	Code []Ref
}

// Ref is a piece of a markdown text and the line (from 1) it starts on.
type Ref struct {
	Line int
	Text string
	// Block: a line of a fenced block (a command, often), not a code span.
	Block bool
}

var (
	headingRE = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	fenceRE   = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")
	// A link's target: `](target)`, `](<target>)` or `](target "title")`.
	linkRE = regexp.MustCompile(`\]\(\s*<?([^\s()<>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// In a heading: an inline link or image, of which a reader sees the text.
	inlineLinkRE = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// Parse reads text. Code spans may wrap lines within a paragraph, as the
// pages' wrapped prose does; a table row is a paragraph of its own.
func Parse(text string) Document {
	var doc Document
	lines := strings.Split(text, "\n")
	// prose holds the lines outside fenced blocks, fenced lines blank, so that
	// offsets into it are offsets into text.
	prose := make([]string, len(lines))
	fence := ""
	for i, line := range lines {
		if fence != "" {
			if strings.HasPrefix(strings.TrimSpace(line), fence) && strings.Trim(strings.TrimSpace(line), fence[:1]) == "" {
				fence = ""
			} else {
				doc.Code = append(doc.Code, Ref{Line: i + 1, Text: line, Block: true})
			}
			continue
		}
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			fence = m[1]
			continue
		}
		prose[i] = line
	}

	slugs := newSlugger()
	for _, block := range paragraphs(prose) {
		masked := []byte(block.text)
		for _, span := range codeSpans(block.text) {
			content := strings.ReplaceAll(block.text[span.start:span.end], "\n", " ")
			if len(content) > 2 && content[0] == ' ' && content[len(content)-1] == ' ' {
				content = content[1 : len(content)-1]
			}
			doc.Code = append(doc.Code, Ref{Line: block.line + strings.Count(block.text[:span.start], "\n"), Text: content})
			// Links are read outside code: blank the span, its ticks included.
			for i := span.start - span.ticks; i < span.end+span.ticks; i++ {
				if masked[i] != '\n' {
					masked[i] = ' '
				}
			}
		}
		for _, m := range linkRE.FindAllSubmatchIndex(masked, -1) {
			doc.Links = append(doc.Links, Ref{Line: block.line + strings.Count(block.text[:m[0]], "\n"), Text: block.text[m[2]:m[3]]})
		}
		for _, line := range strings.Split(block.text, "\n") {
			if m := headingRE.FindStringSubmatch(line); m != nil {
				doc.Anchors = append(doc.Anchors, slugs.slug(m[1]))
			}
		}
	}
	// Fenced lines were read first: put the code in the order written.
	slices.SortStableFunc(doc.Code, func(a, b Ref) int { return a.Line - b.Line })
	return doc
}

// Slug is the anchor GitHub gives a heading's text, before it numbers
// repeats: lower case, letters, digits, '-' and '_' kept, each space a '-',
// everything else dropped. Markdown in the heading counts as its text: a
// link's text, a code span's content.
func Slug(heading string) string {
	heading = inlineLinkRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r), unicode.IsNumber(r), unicode.IsMark(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// slugger numbers repeated anchors as GitHub does (github-slugger): the
// second "a" is "a-1", the third "a-2", skipping any taken by a heading.
type slugger struct{ seen map[string]int }

func newSlugger() *slugger { return &slugger{seen: map[string]int{}} }

func (s *slugger) slug(heading string) string {
	base := Slug(heading)
	slug := base
	for {
		if _, taken := s.seen[slug]; !taken {
			break
		}
		s.seen[base]++
		slug = base + "-" + strconv.Itoa(s.seen[base])
	}
	s.seen[slug] = 0
	return slug
}

type paragraph struct {
	line int // of its first line, from 1
	text string
}

// paragraphs groups prose into runs of non-blank lines, a table row alone.
func paragraphs(prose []string) []paragraph {
	var out []paragraph
	var cur []string
	start := 0
	flush := func() {
		if len(cur) > 0 {
			out = append(out, paragraph{line: start + 1, text: strings.Join(cur, "\n")})
			cur = nil
		}
	}
	for i, line := range prose {
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case strings.HasPrefix(strings.TrimSpace(line), "|"):
			flush()
			out = append(out, paragraph{line: i + 1, text: line})
		default:
			if len(cur) == 0 {
				start = i
			}
			cur = append(cur, line)
		}
	}
	flush()
	return out
}

type span struct{ start, end, ticks int } // content text[start:end]

// codeSpans finds the code spans in a paragraph (CommonMark): a run of n
// backticks opens one, the next run of exactly n closes it, and a run that
// nothing closes is literal text; a backslash escapes a backtick outside code.
func codeSpans(text string) []span {
	var spans []span
	for i := 0; i < len(text); {
		if text[i] == '\\' {
			i += 2
			continue
		}
		if text[i] != '`' {
			i++
			continue
		}
		n := run(text, i)
		closed := false
		for j := i + n; j < len(text); {
			if text[j] != '`' {
				j++
				continue
			}
			m := run(text, j)
			if m == n {
				spans = append(spans, span{start: i + n, end: j, ticks: n})
				i, closed = j+m, true
				break
			}
			j += m
		}
		if !closed {
			i += n
		}
	}
	return spans
}

// run is the length of the run of text[i]'s byte starting at i.
func run(text string, i int) int {
	n := 0
	for i+n < len(text) && text[i+n] == text[i] {
		n++
	}
	return n
}
