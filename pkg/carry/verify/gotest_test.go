package verify

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTestJSON(t *testing.T) {
	const stream = `{"Action":"start","Package":"example.com/racy"}
{"Action":"run","Package":"example.com/racy","Test":"TestShared"}
{"Action":"output","Package":"example.com/racy","Test":"TestShared","Output":"==================\n"}
{"Action":"output","Package":"example.com/racy","Test":"TestShared","Output":"WARNING: DATA RACE\n"}
{"Action":"output","Package":"example.com/racy","Test":"TestShared","Output":"    racy_test.go:12: source changed\n"}
{"Action":"fail","Package":"example.com/racy","Test":"TestShared"}
{"Action":"fail","Package":"example.com/racy"}
{"Action":"output","Package":"example.com/crash","Output":"fatal error: concurrent map writes\n"}
{"Action":"fail","Package":"example.com/crash"}
{"Action":"pass","Package":"example.com/fine","Test":"TestOK"}
{"Action":"pass","Package":"example.com/fine"}
{"ImportPath":"example.com/broken [example.com/broken.test]","Action":"build-output","Output":"broken_test.go:3:2: undefined: newThing\n"}
{"ImportPath":"example.com/broken [example.com/broken.test]","Action":"build-fail"}
`
	got, err := parseTestJSON(strings.NewReader(stream), []string{"example.com/broken", "example.com/crash", "example.com/fine", "example.com/racy", "example.com/silent"})
	if err != nil {
		t.Fatal(err)
	}
	want := []PackageOutcome{
		{ImportPath: "example.com/broken", BuildFailed: true, Excerpt: []string{"broken_test.go:3:2: undefined: newThing"}},
		{ImportPath: "example.com/crash", Fatal: "fatal error: concurrent map writes", Excerpt: []string{"fatal error: concurrent map writes"}},
		{ImportPath: "example.com/fine", Passed: true},
		{ImportPath: "example.com/racy", FailedTests: []string{"TestShared"}, Races: 1, Excerpt: []string{"WARNING: DATA RACE", "    racy_test.go:12: source changed"}},
		{ImportPath: "example.com/silent", BuildFailed: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseTestJSON (-want +got):\n%s", diff)
	}
}

func TestJudge(t *testing.T) {
	pass := PackageOutcome{ImportPath: "p", Passed: true}
	fail := PackageOutcome{ImportPath: "p", FailedTests: []string{"TestX"}}
	broken := PackageOutcome{ImportPath: "p", BuildFailed: true}
	run := func(p PackageOutcome) Outcome { return Outcome{Packages: []PackageOutcome{p}} }
	for name, tc := range map[string]struct {
		steps []Step
		ok    bool
	}{
		"fail without, pass with":           {[]Step{{Without: ptr(run(fail)), With: run(pass)}}, true},
		"a patch without tests that passes": {[]Step{{With: run(pass)}, {Without: ptr(run(fail)), With: run(pass)}}, true},
		"pass without":                      {[]Step{{Without: ptr(run(pass)), With: run(pass)}}, false},
		"fail with":                         {[]Step{{Without: ptr(run(fail)), With: run(fail)}}, false},
		"an earlier patch fails alone":      {[]Step{{With: run(fail)}, {Without: ptr(run(fail)), With: run(pass)}}, false},
		"tests do not compile without":      {[]Step{{Without: ptr(run(broken)), With: run(pass)}}, false},
		"tests lack only what it declares":  {[]Step{{Without: ptr(run(PackageOutcome{ImportPath: "p", BuildFailed: true, MissingNew: []string{"newDetector"}})), With: run(pass)}}, true},
		"tests do not compile with":         {[]Step{{Without: ptr(run(fail)), With: run(broken)}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			r := &Report{Steps: tc.steps}
			r.Problems = judge(r)
			if r.OK() != tc.ok {
				t.Errorf("OK() = %v, want %v (problems: %v)", r.OK(), tc.ok, r.Problems)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
