package verify

import (
	"bufio"
	"encoding/json"
	"io"
	"sort"
	"strings"
)

// PackageOutcome is what `go test -json` said about one package.
type PackageOutcome struct {
	ImportPath string `json:"importPath"`
	// Run is the -run pattern the package's tests ran with, "" for all.
	Run    string `json:"run,omitempty"`
	Passed bool   `json:"passed"`
	// BuildFailed means the tests did not compile: that proves nothing about
	// the fix, so it counts as a failure "without the carry" only for want of
	// what the patch adds (MissingNew).
	BuildFailed bool `json:"buildFailed,omitempty"`
	// MissingNew, for tests that did not compile without a patch, are the
	// names the patch declares that they use, when nothing else was wrong
	// (series.MissingOnly): tests of what the patch adds fail that way.
	MissingNew  []string `json:"missingNew,omitempty"`
	FailedTests []string `json:"failedTests,omitempty"`
	// Races counts race detector reports (WARNING: DATA RACE).
	Races int `json:"races,omitempty"`
	// Fatal is the first runtime fatal error or panic line, if the test
	// binary died.
	Fatal string `json:"fatal,omitempty"`
	// Excerpt holds the failure output worth showing a reviewer.
	Excerpt []string `json:"excerpt,omitempty"`
}

// testEvent is one line of `go test -json` (cmd/test2json).
type testEvent struct {
	Action     string
	Package    string
	ImportPath string // build-output and build-fail events
	Test       string
	Output     string
}

const maxExcerpt = 40

// parseTestJSON reads `go test -json` output and returns an outcome per
// package, sorted by import path. Packages expected but never reported (for
// example because the build failed before test2json saw them) are marked as
// build failures.
func parseTestJSON(r io.Reader, expected []string) ([]PackageOutcome, error) {
	byPkg := map[string]*PackageOutcome{}
	get := func(path string) *PackageOutcome {
		if o, ok := byPkg[path]; ok {
			return o
		}
		o := &PackageOutcome{ImportPath: path}
		byPkg[path] = o
		return o
	}
	reported := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev testEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			// go test prints build errors of the test binary as plain text.
			continue
		}
		switch ev.Action {
		case "build-output":
			o := get(packageOf(ev.ImportPath))
			o.addExcerpt(ev.Output)
		case "build-fail":
			o := get(packageOf(ev.ImportPath))
			o.BuildFailed = true
			reported[o.ImportPath] = true
		case "output":
			o := get(ev.Package)
			out := ev.Output
			if strings.Contains(out, "WARNING: DATA RACE") {
				o.Races++
			}
			trimmed := strings.TrimSpace(out)
			if o.Fatal == "" && (strings.HasPrefix(trimmed, "fatal error:") || strings.HasPrefix(trimmed, "panic:")) {
				o.Fatal = trimmed
			}
			if isFailureLine(trimmed) {
				o.addExcerpt(out)
			}
		case "fail":
			o := get(ev.Package)
			if ev.Test != "" {
				o.FailedTests = append(o.FailedTests, ev.Test)
			} else {
				reported[ev.Package] = true
			}
		case "pass":
			if ev.Test == "" {
				get(ev.Package).Passed = true
				reported[ev.Package] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, p := range expected {
		if !reported[p] {
			get(p).BuildFailed = true
		}
	}
	var out []PackageOutcome
	for _, o := range byPkg {
		if o.ImportPath == "" {
			continue
		}
		sort.Strings(o.FailedTests)
		if o.BuildFailed {
			o.Passed = false
		}
		out = append(out, *o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ImportPath < out[j].ImportPath })
	return out, nil
}

// packageOf strips the " [pkg.test]" suffix go test adds to test build import paths.
func packageOf(importPath string) string {
	p, _, _ := strings.Cut(importPath, " ")
	return p
}

// isFailureLine picks the lines that explain a failure: test failures with
// their messages, race reports and runtime crashes.
func isFailureLine(s string) bool {
	for _, prefix := range []string{"--- FAIL", "WARNING: DATA RACE", "fatal error:", "panic:", "testing.go:"} {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	// Test log lines look like "file_test.go:123: message".
	if i := strings.Index(s, "_test.go:"); i > 0 && !strings.Contains(s[:i], " ") {
		return true
	}
	return false
}

func (o *PackageOutcome) addExcerpt(line string) {
	if len(o.Excerpt) < maxExcerpt {
		o.Excerpt = append(o.Excerpt, strings.TrimRight(line, "\n"))
	}
}
