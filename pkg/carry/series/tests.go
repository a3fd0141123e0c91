package series

import (
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// TestFunc is a top-level test function of a package directory.
type TestFunc struct {
	Dir  string `json:"dir"`
	Name string `json:"name"`
}

func (t TestFunc) String() string { return t.Dir + "." + t.Name }

// topLevelTest is the first line of a top-level test function.
var topLevelTest = regexp.MustCompile(`^func (Test[A-Za-z0-9_]*)\(t \*testing\.T\)`)

// ChangedTests are the top-level test functions, in _test.go files under
// dirPrefix (test/e2e/), whose body the patches add or change, in order of
// appearance: a hunk's lines are attributed to the function they lie in,
// from its header's function or a func line it adds or keeps, until a
// closing brace at the left margin.
func ChangedTests(patches []*Patch, dirPrefix string) []TestFunc {
	var tests []TestFunc
	for _, p := range patches {
		for _, f := range p.Files {
			name := f.NewName
			if f.IsDelete || !strings.HasPrefix(name, dirPrefix) || !strings.HasSuffix(name, "_test.go") {
				continue
			}
			dir := path.Dir(name)
			for _, frag := range f.TextFragments {
				current := ""
				if m := topLevelTest.FindStringSubmatch(strings.TrimSpace(frag.Comment)); m != nil {
					current = m[1]
				}
				for _, l := range frag.Lines {
					if m := topLevelTest.FindStringSubmatch(l.Line); m != nil {
						current = m[1]
					} else if strings.HasPrefix(l.Line, "}") && l.Op == gitdiff.OpContext {
						// The end of a function at the left margin: a change
						// after it is in no test until the next starts.
						current = ""
						continue
					}
					if t := (TestFunc{Dir: dir, Name: current}); current != "" && l.Op != gitdiff.OpContext && !slices.Contains(tests, t) {
						tests = append(tests, t)
					}
				}
			}
		}
	}
	return tests
}
