package docs

import (
	"slices"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

// TestCheckerReportsWhatIsMissing is the checker's positive control: a
// broken link, a bad anchor, an unknown make target and an unknown carry
// command are each reported, at their line, and what exists is not.
func TestCheckerReportsWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	testfs.WriteTree(t, dir, map[string]string{
		"docs/other.md":      "# Other page\n\n## The `carry` command?\n\n## Cost\n\n## Cost\n",
		"kcp-patches/series": "",
		"README.md": "# Top\n\n" +
			"[ok](docs/other.md#the-carry-command) [second](docs/other.md#cost-1) [self](#top) [dir](kcp-patches/)\n" +
			"[web](https://example.com/nope.md) [gone](docs/nope.md)\n" +
			"[bad anchor](docs/other.md#nope) [out](../elsewhere.md)\n" +
			"Run `make test KCP_SOURCE=~/src/kcp`, `make`, `make test-nope` or `carry scrub --apply`.\n" +
			"```sh\n" +
			"make KCP_SOURCE=x test-quick && bin/carry nope   # make test-gone in a comment\n" +
			"kubectl carry scrub; kubectl-carry unknown; carry <command> --help\n" +
			"[not a link](nowhere.md)\n" +
			"```\n",
	})
	c := NewChecker(dir, []string{"all", "test", "test-quick"}, []string{"scrub", "help"})
	problems, err := c.Check("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	want := []string{
		"README.md:4: link docs/nope.md: no such file",
		"README.md:5: link docs/other.md#nope: no heading of other.md has the anchor #nope",
		"README.md:5: link ../elsewhere.md: outside the repository",
		"README.md:6: make test-nope: no such target in the Makefile",
		"README.md:8: carry nope: no such command in carry --help",
		"README.md:9: carry unknown: no such command in carry --help",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if want := (Counts{Links: 7, Anchors: 4, MakeTargets: 3, CarryCommands: 4}); c.Counts != want {
		t.Errorf("counts %+v, want %+v", c.Counts, want)
	}

	if _, err := c.Check("MISSING.md"); err == nil || !strings.Contains(err.Error(), "MISSING.md") {
		t.Errorf("a missing page: error %v, want one naming it", err)
	}
}

func TestMakefileTargets(t *testing.T) {
	got := MakefileTargets(`# a: comment
GO ?= go
X := a:b
Y = http://example.com
Z ::= 1
.PHONY: all test
$(TEST_TARGETS): export GOFLAGS := -trimpath
all: build kcp

build kcp-race: overlay
	$(GO) build ./... ; echo recipe: not a rule
ifneq ($(KCP_SOURCE),)
kcp: overlay
else
kcp: overlay
endif
ifeq ($(RACE),1)
test-sharded: overlay
else
test-sharded: sharded
endif
define RECIPE
inside: a define
endef
%.o: %.c
`)
	if want := []string{"all", "build", "kcp-race", "kcp", "test-sharded"}; !slices.Equal(got, want) {
		t.Errorf("MakefileTargets = %q, want %q", got, want)
	}
}

func TestMakeTargetsIn(t *testing.T) {
	for code, want := range map[string][]string{
		"make":                                            nil,
		"make test":                                       {"test"},
		"make KCP_SOURCE=~/src/kcp":                       nil,
		"make test-sharded RACE=1":                        {"test-sharded"},
		"make soak SOAK_FLAGS='--kcp-arg a=b' x":          {"soak", "x"},
		"make overlay && git diff":                        {"overlay"},
		"make <target> and more":                          nil,
		"x := make([]string, 0)":                          nil,
		"cd dir; make -j2 build # make gone":              {"build"},
		"make: skipping bin/kcp":                          nil,
		"# make gone, in a comment":                       nil,
		"make evidence EVIDENCE_FLAGS='--note \"a # b\"'": {"evidence"},
	} {
		if got := MakeTargetsIn(code); !slices.Equal(got, want) {
			t.Errorf("MakeTargetsIn(%q) = %q, want %q", code, got, want)
		}
	}
}

func TestCarryHelpCommands(t *testing.T) {
	help := "carry manages ...\n\nUsage:\n  carry [command]\n\nAvailable Commands:\n" +
		"  build       link kcp's servers\n  help        Help about any command\n  scrub       find\n\n" +
		"Flags:\n  -h, --help   help for carry\n"
	if got, want := CarryHelpCommands(help), []string{"build", "help", "scrub"}; !slices.Equal(got, want) {
		t.Errorf("CarryCommands = %q, want %q", got, want)
	}
	for code, want := range map[string][]string{
		"bin/carry build --kcp-source dir":             {"build"},
		"kubectl carry scrub --apply":                  {"scrub"},
		"carry <command> --help":                       nil,
		"carry --help":                                 nil,
		"git am <kcp-carry>/kcp-patches/0*":            nil,
		"UPSTREAM: <carry>: x":                         nil,
		"+kcp-<version>-carry-<id>":                    nil,
		"(bin/carry verify)":                           {"verify"},
		"50 objects carry kcp.io/original-api-version": nil,
	} {
		if got := CarryCommandsIn(code); !slices.Equal(got, want) {
			t.Errorf("CarryCommandsIn(%q) = %q, want %q", code, got, want)
		}
	}
}

func TestTargetsTableProblems(t *testing.T) {
	page := "# CI\n\n## " + TargetsHeading + "\n\n| target | what it runs | how long |\n|---|---|---|\n" +
		"| `make` (`all`) | the main job | 2 min |\n" +
		"| `make test`, `make test-quick` | the suite | not measured |\n" +
		"| `make kcp` | kcp | |\n" +
		"| nothing | x | y |\n\n## Next\n\n| `make clean` | c | d |\n"
	got := TargetsTableProblems(page, []string{"all", "test", "test-quick", "kcp", "clean"})
	want := []string{
		"row \"| `make kcp` | kcp | |\": say what it runs and how long it takes (or that it is not measured)",
		`row "| nothing | x | y |" names no make target`,
		`the table under "Every make target" has no row for make clean`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := TargetsTableProblems("# CI\n", nil); len(got) != 1 || !strings.Contains(got[0], "no heading") {
		t.Errorf("a page without the table: %q", got)
	}
}

func TestREADMEProblems(t *testing.T) {
	good := "# x\n\n## Set up\n\n```sh\nmake        # main job\nmake test   # the suite\n```\n\n" +
		"`make` takes 2 min; `KCP_SOURCE=<tree>` makes `make test` test kcp too.\n\n## More\n\n```sh\nbin/carry scrub\n```\n"
	if got := READMEProblems(good); len(got) != 0 {
		t.Errorf("a good README: %q", got)
	}
	bad := strings.Replace(good, "make test   # the suite\n", "make test   # the suite\nmake test-quick\n", 1) +
		strings.Repeat("\n", READMEMaxLines)
	got := READMEProblems(bad)
	if len(got) != 2 || !strings.Contains(got[0], "lines; at most 120") || !strings.Contains(got[1], `["make" "make test" "make test-quick"]`) {
		t.Errorf("a long README with a third command: %q", got)
	}
}
