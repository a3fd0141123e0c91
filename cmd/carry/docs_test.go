package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

// The docs the repository's readers follow: every `carry <command> --flag`
// they name must be a flag of that command in the real command tree. Their
// links, anchors, make targets and carry commands are test/docs' checks.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "CONTRIBUTING.md")}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(more) == 0 {
		t.Fatalf("docs/*.md: %v (%d files)", err, len(more))
	}
	return append(files, more...)
}

func TestDocsFlags(t *testing.T) {
	root := testfs.RepoRoot(t)
	c := newDocChecker(NewCommand(io.Discard, io.Discard))
	for _, f := range docFiles(t, root) {
		c.check(f)
	}
	for _, p := range c.problems {
		t.Error(p)
	}
	// Not vacuous: the docs name flags throughout.
	if c.flags < 20 {
		t.Errorf("checked %d flags; the parser lost track of the docs", c.flags)
	}
	t.Logf("checked %d carry flags", c.flags)
}

// TestDocChecker: the checker finds a flag the command does not have, in
// code spans, fenced blocks and table rows, and accepts what exists.
func TestDocChecker(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("docs/other.md", "# Other page\n\n## The `carry` command?\n")
	doc := write("README.md", "# Top\n\n"+
		"[ok](docs/other.md#the-carry-command) [self](#top) [web](https://example.com/x.md)\n"+
		"[gone](docs/nope.md) [bad anchor](docs/other.md#nope)\n"+
		"Run `carry scrub --apply --server x` or `carry scrub --no-such-flag`.\n"+
		"```sh\nbin/carry build --kcp-source dir --racy   # a comment --not-a-flag\n[not a link](nowhere.md)\n```\n"+
		"| `carry pins` | `--write`, `--wrote` |\n")
	c := newDocChecker(NewCommand(io.Discard, io.Discard))
	c.check(doc)
	got := strings.Join(c.problems, "\n")
	for _, want := range []string{
		"README.md: carry scrub --no-such-flag: no such flag",
		"README.md: carry build --racy: no such flag",
		"README.md: carry pins --wrote: no such flag",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems do not contain %q:\n%s", want, got)
		}
	}
	if len(c.problems) != 3 || c.flags != 7 {
		t.Errorf("%d problems (want 3), %d flags (want 7):\n%s", len(c.problems), c.flags, got)
	}
}

type docChecker struct {
	cmds     map[string]*cobra.Command
	flags    int
	problems []string
}

func newDocChecker(root *cobra.Command) *docChecker {
	c := &docChecker{cmds: map[string]*cobra.Command{}}
	for _, sub := range root.Commands() {
		c.cmds[sub.Name()] = sub
	}
	return c
}

var (
	codeSpanRE = regexp.MustCompile("`([^`]+)`")
	// carry <command> and what follows it on the line or in the span.
	carryRE = regexp.MustCompile(`(?:^|[\s/(])carry\s+([a-z]+)\b([^|;&#]*)`)
	flagRE  = regexp.MustCompile(`(?:^|\s)(--[a-z][a-z0-9-]*)`)
	// a table row whose first cell is a carry command.
	rowRE = regexp.MustCompile("^\\|\\s*`(?:bin/)?carry ([a-z]+)`\\s*\\|")
)

func (c *docChecker) problem(file, format string, args ...any) {
	c.problems = append(c.problems, filepath.Base(file)+": "+fmt.Sprintf(format, args...))
}

// check reads one markdown file: carry flags inside code (spans, fenced
// blocks) and in table rows about a carry command.
func (c *docChecker) check(file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		c.problem(file, "%v", err)
		return
	}
	fenced := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			c.checkCommand(file, line)
			continue
		}
		if m := rowRE.FindStringSubmatch(line); m != nil {
			for _, f := range flagRE.FindAllStringSubmatch(strings.ReplaceAll(line, "`", " "), -1) {
				c.checkFlag(file, m[1], f[1])
			}
			continue
		}
		for _, span := range codeSpanRE.FindAllStringSubmatch(line, -1) {
			c.checkCommand(file, span[1])
		}
	}
}

// checkCommand checks the flags of every `carry <command> ...` in text.
func (c *docChecker) checkCommand(file, text string) {
	for _, m := range carryRE.FindAllStringSubmatch(text, -1) {
		if c.cmds[m[1]] == nil {
			continue
		}
		for _, f := range flagRE.FindAllStringSubmatch(m[2], -1) {
			c.checkFlag(file, m[1], f[1])
		}
	}
}

func (c *docChecker) checkFlag(file, command, flag string) {
	c.flags++
	name := strings.TrimPrefix(flag, "--")
	if name == "help" {
		return
	}
	if c.cmds[command].Flags().Lookup(name) == nil {
		c.problem(file, "carry %s %s: no such flag", command, flag)
	}
}

// TestExitStatusDocs: docs/exit-status.md has exactly the code's table, and
// docs/scrub.md's exit statuses are rows of it.
func TestExitStatusDocs(t *testing.T) {
	root := testfs.RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "docs", "exit-status.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(string(data), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if len(cells) != 4 {
			continue
		}
		if _, err := strconv.Atoi(strings.TrimSpace(cells[0])); err != nil {
			continue
		}
		for i := range cells {
			cells[i] = strings.ReplaceAll(strings.TrimSpace(cells[i]), "`", "")
		}
		rows = append(rows, strings.Join(cells, " | "))
	}
	var want []string
	for _, s := range exitStatuses {
		who := "all"
		if len(s.Commands) > 0 {
			who = strings.Join(s.Commands, ", ")
		}
		want = append(want, fmt.Sprintf("%d | %s | %s | %s", s.Code, s.Name, who, s.Meaning))
	}
	if !slices.Equal(rows, want) {
		t.Errorf("docs/exit-status.md's table:\n%s\nthe code's (cmd/carry/exit.go):\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}

	scrubDoc, err := os.ReadFile(filepath.Join(root, "docs", "scrub.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sentence, ok := strings.Cut(strings.Join(strings.Fields(string(scrubDoc)), " "), "Exit status: ")
	if !ok {
		t.Fatal("docs/scrub.md has no \"Exit status: \" sentence")
	}
	sentence, _, _ = strings.Cut(sentence, ": rows of")
	pairs := regexp.MustCompile(`(?:^|, )(\d+) ([a-z]+)`).FindAllStringSubmatch(sentence, -1)
	if len(pairs) < 7 {
		t.Fatalf("docs/scrub.md's exit statuses %q: %d found, want every row scrub uses", sentence, len(pairs))
	}
	for _, p := range pairs {
		code, _ := strconv.Atoi(p[1])
		i := slices.IndexFunc(exitStatuses, func(s exitStatus) bool { return s.Code == code })
		if i < 0 || exitStatuses[i].Name != p[2] || len(exitStatuses[i].Commands) > 0 && !slices.Contains(exitStatuses[i].Commands, "scrub") {
			t.Errorf("docs/scrub.md says exit status %d is %q; the table (cmd/carry/exit.go) does not", code, p[2])
		}
	}
}

// TestExitTable: no number means two things, and the help shows the table.
func TestExitTable(t *testing.T) {
	seen := map[int]string{}
	for _, s := range exitStatuses {
		if prev, ok := seen[s.Code]; ok {
			t.Errorf("exit status %d means %q and %q", s.Code, prev, s.Name)
		}
		seen[s.Code] = s.Name
	}
	var stdout strings.Builder
	if code := Main([]string{"--help"}, &stdout, io.Discard); code != ExitOK {
		t.Fatalf("carry --help = %d", code)
	}
	for _, s := range exitStatuses {
		if !regexp.MustCompile(`(?m)^  ` + strconv.Itoa(s.Code) + `\s+` + s.Name + `\s`).MatchString(stdout.String()) {
			t.Errorf("carry --help does not show exit status %d (%s):\n%s", s.Code, s.Name, stdout.String())
		}
	}
	for cmd, want := range map[string][]string{"scrub": {"4", "5", "6", "7"}, "build": {"3"}, "image": {"3"}} {
		var out strings.Builder
		Main([]string{cmd, "--help"}, &out, io.Discard)
		for _, code := range want {
			if !regexp.MustCompile(`(?m)^  ` + code + `\s`).MatchString(out.String()) {
				t.Errorf("carry %s --help does not show its exit status %s:\n%s", cmd, code, out.String())
			}
		}
	}
}
