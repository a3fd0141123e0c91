package series

import (
	"go/token"
	"regexp"
	"slices"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// declRE finds what an added Go line declares: a func or method, a var,
// const or type, or a struct field ("name Type").
var declRE = []*regexp.Regexp{
	regexp.MustCompile(`^\s*func\s+(?:\([^)]*\)\s*)?(\w+)`),
	regexp.MustCompile(`^\s*(?:var|const|type)\s+(\w+)`),
	regexp.MustCompile(`^\t+(\w+)\s+[\w*.\[\]]+\s*(?://.*)?$`),
}

// Declared lists, sorted, the identifiers the patches declare on added
// lines of their Go files other than tests.
func Declared(patches ...*Patch) []string {
	var names []string
	for _, p := range patches {
		for _, f := range p.Files {
			if !strings.HasSuffix(f.NewName, ".go") || strings.HasSuffix(f.NewName, "_test.go") {
				continue
			}
			for _, frag := range f.TextFragments {
				for _, l := range frag.Lines {
					if l.Op != gitdiff.OpAdd {
						continue
					}
					for _, re := range declRE {
						if m := re.FindStringSubmatch(strings.TrimRight(l.Line, "\r\n")); m != nil && !token.IsKeyword(m[1]) {
							names = append(names, m[1])
							break
						}
					}
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

var (
	// compileErrorRE is a compiler error line: "file.go:12:3: message".
	compileErrorRE = regexp.MustCompile(`\.go:\d+:\d+: (.*)$`)
	// missingRE are the compiler's words for a name that does not exist.
	missingRE = []*regexp.Regexp{
		regexp.MustCompile(`undefined: (?:\w+\.)?(\w+)$`),
		regexp.MustCompile(`has no field or method (\w+)`),
		regexp.MustCompile(`unknown field (\w+) in struct literal`),
	}
)

// MissingOnly reports whether the build output of a test binary that did
// not compile shows only names the patches declare (Declared) missing, and
// which. Tests of a new switch or constructor cannot compile without it:
// that is how they fail without their patch, as an assertion fails for a
// fix. Any other compile error, or none found, is false.
func MissingOnly(buildOutput []string, patches ...*Patch) ([]string, bool) {
	declared := Declared(patches...)
	var missing []string
	for _, line := range buildOutput {
		m := compileErrorRE.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		name := ""
		for _, re := range missingRE {
			if mm := re.FindStringSubmatch(m[1]); mm != nil {
				name = mm[1]
				break
			}
		}
		if name == "" || !slices.Contains(declared, name) {
			return nil, false
		}
		missing = append(missing, name)
	}
	slices.Sort(missing)
	missing = slices.Compact(missing)
	return missing, len(missing) > 0
}
