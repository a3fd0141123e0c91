package series

import (
	"slices"
	"testing"
)

func TestMissingOnly(t *testing.T) {
	before := map[string]string{
		"cache/cacher.go": "package cache\n\ntype watchCache struct {\n\tstore string\n}\n",
	}
	after := map[string]string{
		"cache/cacher.go":      "package cache\n\nvar newDetector = fromEnv(nil)\n\nfunc fromEnv(getenv func(string) string) func() {\n\treturn nil\n}\n\ntype watchCache struct {\n\tstore string\n\tdetector Detector // set by newDetector\n}\n",
		"cache/cacher_test.go": "package cache\n\nfunc TestX() { _ = newDetector }\n",
	}
	p, err := ParsePatch("0004.patch", gitPatch(t, before, after, "UPSTREAM: <carry>: cache: a detector"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Declared(p), []string{"detector", "fromEnv", "newDetector"}; !slices.Equal(got, want) {
		t.Errorf("Declared = %q, want %q", got, want)
	}
	for name, tc := range map[string]struct {
		output  []string
		missing []string
		ok      bool
	}{
		"only what the patch declares": {[]string{
			"# example.com/cache [example.com/cache.test]",
			"cache/cacher_test.go:3:21: undefined: newDetector",
			"cache/cacher_test.go:4:9: w.detector undefined (type *watchCache has no field or method detector)",
			"cache/cacher_test.go:5:2: undefined: cache.fromEnv",
		}, []string{"detector", "fromEnv", "newDetector"}, true},
		"another name":     {[]string{"cache/cacher_test.go:3:21: undefined: newDetector", "cache/cacher_test.go:4:2: undefined: somethingElse"}, nil, false},
		"another error":    {[]string{"cache/cacher_test.go:3:21: cannot use x (variable of type int) as string value"}, nil, false},
		"no compile error": {[]string{"FAIL example.com/cache [setup failed]"}, nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			missing, ok := MissingOnly(tc.output, p)
			if ok != tc.ok || !slices.Equal(missing, tc.missing) {
				t.Errorf("MissingOnly = %q, %v, want %q, %v", missing, ok, tc.missing, tc.ok)
			}
		})
	}
}
