// Package docs checks what the repository's pages tell a reader to follow:
// every relative link resolves to a file and its #anchor to a heading there,
// every `make <target>` they name is a target of the Makefile, and every
// `carry <command>` a command of `carry --help`; and (shape.go) that the
// README stays a first screen and docs/ci.md lists every make target.
package docs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/util/markdown"
)

// Problem is one thing a page names that does not exist.
type Problem struct {
	File string // relative to the root, slash-separated
	Line int
	What string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.What) }

// Counts is how much the checker read, so that a test can tell a clean
// page from a parser that found nothing to check.
type Counts struct {
	Links, Anchors, MakeTargets, CarryCommands int
}

// Checker checks pages under one root against the names they may use.
type Checker struct {
	root          string
	makeTargets   []string
	carryCommands []string
	anchors       map[string][]string // a page's anchors, by path, read once
	Counts        Counts
}

// NewChecker checks pages under root; makeTargets are the Makefile's
// targets (MakefileTargets), carryCommands `carry --help`'s (CarryHelpCommands).
func NewChecker(root string, makeTargets, carryCommands []string) *Checker {
	return &Checker{root: root, makeTargets: makeTargets, carryCommands: carryCommands, anchors: map[string][]string{}}
}

// Check reads one page, rel to the root, and returns what it names that
// does not exist; the error is for a page it could not read.
func (c *Checker) Check(rel string) ([]Problem, error) {
	path := filepath.Join(c.root, filepath.FromSlash(rel))
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("docs: %w", err)
	}
	doc := markdown.Parse(string(data))
	var problems []Problem
	report := func(line int, format string, args ...any) {
		problems = append(problems, Problem{File: filepath.ToSlash(rel), Line: line, What: fmt.Sprintf(format, args...)})
	}
	for _, link := range doc.Links {
		if what := c.checkLink(path, link.Text); what != "" {
			report(link.Line, "link %s: %s", link.Text, what)
		}
	}
	for _, code := range doc.Code {
		for _, target := range MakeTargetsIn(code.Text) {
			c.Counts.MakeTargets++
			if !slices.Contains(c.makeTargets, target) {
				report(code.Line, "make %s: no such target in the Makefile", target)
			}
		}
		for _, command := range CarryCommandsIn(code.Text) {
			c.Counts.CarryCommands++
			if !slices.Contains(c.carryCommands, command) {
				report(code.Line, "carry %s: no such command in carry --help", command)
			}
		}
	}
	return problems, nil
}

// checkLink says what is wrong with a link from the page at path, or "".
func (c *Checker) checkLink(path, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return "" // not the repository's to keep
	}
	c.Counts.Links++
	file, anchor, _ := strings.Cut(target, "#")
	dest := path
	if file != "" {
		dest = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
		if rel, err := filepath.Rel(c.root, dest); err != nil || strings.HasPrefix(rel, "..") {
			return "outside the repository"
		}
		if _, err := os.Stat(dest); err != nil {
			return "no such file"
		}
	}
	if anchor == "" {
		return ""
	}
	c.Counts.Anchors++
	if filepath.Ext(dest) != ".md" {
		return "an anchor into a file that is not markdown"
	}
	anchors, err := c.anchorsOf(dest)
	if err != nil {
		return err.Error()
	}
	if !slices.Contains(anchors, anchor) {
		return fmt.Sprintf("no heading of %s has the anchor #%s", filepath.Base(dest), anchor)
	}
	return ""
}

func (c *Checker) anchorsOf(path string) ([]string, error) {
	if anchors, ok := c.anchors[path]; ok {
		return anchors, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading its headings: %w", err)
	}
	c.anchors[path] = markdown.Parse(string(data)).Anchors
	return c.anchors[path], nil
}

var (
	// make as a command: at the start, after a space or a shell operator.
	makeRE = regexp.MustCompile("(?:^|[\\s(;&|])make(?:$|[ \t]+)")
	// carry as a command, also bin/carry, kubectl carry and kubectl-carry:
	// the word after it, unless a placeholder (`carry <command>`), a flag
	// or prose (objects carry kcp.io/original-api-version).
	carryRE  = regexp.MustCompile(`(?:^|[\s(/]|kubectl-)carry[ \t]+([a-z][a-z0-9-]*)(?:$|[\s;|&)'",:])`)
	targetRE = regexp.MustCompile(`^[a-z][a-z0-9_.-]*$`)
)

// MakeTargetsIn is the targets of every make command in a line of code:
// `make VAR=value target ...` up to a shell operator or a comment. `make`
// alone names none (it runs the default target).
func MakeTargetsIn(code string) []string {
	var targets []string
	code = uncommented(code)
	for _, loc := range makeRE.FindAllStringIndex(code, -1) {
	words:
		for _, word := range shellWords(code[loc[1]:]) {
			switch {
			case strings.Contains(word, "="), strings.HasPrefix(word, "-"):
				continue // a variable or a flag
			case targetRE.MatchString(word):
				targets = append(targets, word)
				continue
			}
			break words // prose or a placeholder (`make <target>`): the command ended
		}
	}
	return targets
}

// CarryCommandsIn is the command of every carry command in a line of code.
func CarryCommandsIn(code string) []string {
	var commands []string
	for _, m := range carryRE.FindAllStringSubmatch(uncommented(code), -1) {
		commands = append(commands, m[1])
	}
	return commands
}

// uncommented is a line of shell without its comment: from a # that
// starts a word, outside quotes (docs/x.md#anchor is no comment).
func uncommented(line string) string {
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		switch ch := line[i]; {
		case quote != 0:
			if ch == quote {
				quote = 0
			}
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

// shellWords splits the start of a command line into words, quotes and
// placeholders kept whole, up to the first shell operator.
func shellWords(s string) []string {
	var words []string
	var word strings.Builder
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			}
			word.WriteByte(ch)
		case ch == '\'' || ch == '"':
			quote = ch
			word.WriteByte(ch)
		case ch == '<': // a placeholder, <kcp main tree>, is one word
			quote = '>'
			word.WriteByte(ch)
		case ch == ' ' || ch == '\t':
			if word.Len() > 0 {
				words = append(words, word.String())
				word.Reset()
			}
		case strings.IndexByte(";&|)`", ch) >= 0:
			if word.Len() > 0 {
				words = append(words, word.String())
			}
			return words
		default:
			word.WriteByte(ch)
		}
	}
	if word.Len() > 0 {
		words = append(words, word.String())
	}
	return words
}

// MakefileTargets reads the targets a Makefile defines: the names of its rules
// in every branch of its conditionals (make itself reads one), not its
// variables, its special targets (.PHONY) or names made of variables.
func MakefileTargets(makefile string) []string {
	var targets []string
	inDefine := false
	for _, line := range strings.Split(makefile, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "define "):
			inDefine = true
			continue
		case trimmed == "endef":
			inDefine = false
			continue
		case inDefine, strings.HasPrefix(line, "\t"), strings.HasPrefix(trimmed, "#"):
			continue
		}
		names, rest, isRule := strings.Cut(line, ":")
		// `X := v`, `X ::= v` and `X = a:b` are variables, not rules.
		if !isRule || strings.Contains(names, "=") || strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, ":=") {
			continue
		}
		for _, name := range strings.Fields(names) {
			if !strings.HasPrefix(name, ".") && !strings.ContainsAny(name, "$%") && !slices.Contains(targets, name) {
				targets = append(targets, name)
			}
		}
	}
	return targets
}

// CarryHelpCommands reads the commands `carry --help` lists (cobra's
// "Available Commands:" section).
func CarryHelpCommands(help string) []string {
	var commands []string
	scanner := bufio.NewScanner(strings.NewReader(help))
	listing := false
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case strings.TrimSpace(line) == "Available Commands:":
			listing = true
		case listing && strings.TrimSpace(line) == "":
			return commands
		case listing:
			commands = append(commands, strings.Fields(line)[0])
		}
	}
	return commands
}
