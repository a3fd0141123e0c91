package requestshape

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCatalogueEntries: every entry has a name of its own that cannot be
// read as another part of a shape name, and means one thing.
func TestCatalogueEntries(t *testing.T) {
	reserved := map[string]bool{"": true, "get": true, "watch": true, "list": true, "cluster": true, "wildcard": true, "kcp": true, "paged": true, RVAny: true, RVExact: true}
	seen := map[string]bool{}
	for _, a := range Accepts {
		if reserved[a.Name] || seen[a.Name] || strings.Contains(a.Name, ":") {
			t.Errorf("accept %+v: its name is taken, reserved or holds a colon", a)
		}
		seen[a.Name] = true
		if (a.Media == "") == (a.MetaVersion == "") {
			t.Errorf("accept %s: want either a media type or a meta.k8s.io version", a.Name)
		}
	}
	seen = map[string]bool{}
	for i, s := range Selectors {
		if s == Plain {
			if i != 0 {
				t.Errorf("the plain selector is entry %d, want 0", i)
			}
			continue
		}
		if reserved[s.Name] || seen[s.Name] || strings.Contains(s.Name, ":") {
			t.Errorf("selector %+v: its name is taken, reserved or holds a colon", s)
		}
		seen[s.Name] = true
		if err := s.validate(); err != nil {
			t.Error(err)
		}
		// The detector matrix's objects (test/detector).
		if !s.Selects("m-1", map[string]string{"parity": "odd"}) && !s.Selects("m-2", map[string]string{"parity": "even"}) {
			t.Errorf("selector %s selects none of the detector matrix's objects", s.Name)
		}
	}
	for _, s := range append(append(append([]Shape{StepLister, KCPRatioLister, BenchList, BenchWatch}, HammerListers...), HammerWatchers...), MixedWatchers...) {
		if err := s.Validate(); err != nil {
			t.Error(err)
		}
	}
}

// TestNamesRoundTrip: every shape the catalogue makes is read back from its
// name as the same shape, and no two shapes share a name.
func TestNamesRoundTrip(t *testing.T) {
	all := append(Matrix(), HammerListers...)
	all = append(all, HammerWatchers...)
	all = append(all, MixedWatchers...)
	names := map[string]Shape{}
	for _, s := range all {
		n := s.Name()
		back, err := Parse(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if back != s {
			t.Errorf("%s reads back as %+v, want %+v", n, back, s)
		}
		if o, ok := names[n]; ok && o != s {
			t.Errorf("%s names both %+v and %+v", n, o, s)
		}
		names[n] = s
	}
}

// TestHammerSpelling: the hammer's lister spelling (README, --lister-shapes,
// evidence/duel.json) reads as the partial-metadata LISTs it always meant.
func TestHammerSpelling(t *testing.T) {
	for name, want := range map[string]Shape{
		"kcp:0":           {Verb: List, Scope: Wildcard, Accept: PartialV1, ResourceVersion: "0", KCPMetadataClient: true},
		"kcp:":            {Verb: List, Scope: Wildcard, Accept: PartialV1, KCPMetadataClient: true},
		"v1beta1:":        {Verb: List, Scope: Wildcard, Accept: PartialV1beta1},
		"v1beta1:0:paged": {Verb: List, Scope: Wildcard, Accept: PartialV1beta1, ResourceVersion: "0", Paged: true},
		"v1::paged":       {Verb: List, Scope: Wildcard, Accept: PartialV1, Paged: true},
	} {
		got, err := Parse(name)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", name, got, err, want)
		}
	}
	var names []string
	for _, s := range HammerListers {
		names = append(names, s.Name())
	}
	// The mix of every evidence run so far.
	if got, want := strings.Join(names, " "), "kcp:0 v1beta1: v1:0 v1beta1:0:paged v1: v1beta1:0 v1::paged kcp:"; got != want {
		t.Errorf("the hammer's default listers are %s, want %s", got, want)
	}
}

// TestInvalidShapesRefused: what kcp does not serve, or the harness cannot
// send, is refused with the reason.
func TestInvalidShapesRefused(t *testing.T) {
	for name, why := range map[string]string{
		"get:v1:0":                     "no wildcard GET",
		"get:cluster:json::label":      "a GET names its object",
		"field-name":                   "no <accept>:<rv>",
		"v1:0:field-name":              "single-cluster scope only",
		"watch:json:0:field-name":      "single-cluster scope only",
		"kcp:0:label":                  "", // valid: kcp's client sends selectors too
		"watch:kcp:0":                  "kcp's metadata client sends partial-metadata LISTs",
		"watch:v1:0:paged":             "only a LIST is paged",
		"get:cluster:json::paged":      "only a LIST is paged",
		"v1:exact":                     "is for watches",
		"v2:0":                         `accept "v2" is not kcp or one of json, protobuf, v1, v1beta1, table`,
		"v1:5":                         `resourceVersion "5" is not one of`,
		"v1:0:pages":                   `"pages" is not paged or a selector (label, field, field-name)`,
		"kcp":                          "no <accept>:<rv>",
		"v1:0:paged:label:x":           `unexpected "x"`,
		"cluster:watch:v1:0":           `accept "watch"`,
		"v1:0:":                        `"" is not paged or a selector`,
		"watch:cluster:protobuf:0:foo": `"foo" is not paged or a selector`,
	} {
		_, err := Parse(name)
		switch {
		case why == "" && err != nil:
			t.Errorf("Parse(%q): %v, want it accepted", name, err)
		case why != "" && (err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), name)):
			t.Errorf("Parse(%q) = %v, want an error naming the shape and saying %q", name, err, why)
		}
	}
	if err := (Shape{Verb: List, Scope: Wildcard, Accept: Accept{Name: "v1", MetaVersion: "v2"}}).Validate(); err == nil || !strings.Contains(err.Error(), "not in the catalogue") {
		t.Errorf("an Accept outside the catalogue: %v", err)
	}
}

// TestMatrix: the detector matrix's shapes, 170 per resource: per Accept and
// resourceVersion 7 wildcard (LIST plain, label, field, paged; WATCH plain,
// label, field) and 10 single-cluster (the same with field-name, and GET).
// A catalogue entry changes this number on purpose: update it here and in
// test/detector (its cell count).
func TestMatrix(t *testing.T) {
	m := Matrix()
	// The matrix's size, counted from the catalogue's dimensions by kcp's
	// rules rather than pinned, so that a new entry needs no other edit:
	// per Accept and resourceVersion, each selector the scope allows as a
	// LIST and as a WATCH, one paged LIST, and in single-cluster scope one
	// GET (kcp serves no wildcard GET).
	perScope := func(scope Scope) int {
		selectors := 0
		for _, sel := range Selectors {
			if (Shape{Verb: List, Scope: scope, Accept: JSON, Selector: sel}).Validate() == nil {
				selectors++
			}
		}
		n := 2*selectors + 1
		if scope == SingleCluster {
			n++
		}
		return n * len(Accepts) * len(ResourceVersions)
	}
	if want := perScope(Wildcard) + perScope(SingleCluster); len(m) != want {
		t.Errorf("the matrix has %d shapes, want %d", len(m), want)
	}
	var first []string
	for _, s := range m[:17] {
		first = append(first, s.Name())
	}
	want := []string{"json:", "json::label", "json::field", "json::paged", "watch:json:", "watch:json::label", "watch:json::field",
		"json:0", "json:0:label", "json:0:field", "json:0:paged", "watch:json:0", "watch:json:0:label", "watch:json:0:field",
		"protobuf:", "protobuf::label", "protobuf::field"}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("the matrix's order (-want +got):\n%s", diff)
	}
	cluster := 0
	for _, s := range m {
		if err := s.Validate(); err != nil {
			t.Error(err)
		}
		if s.Scope == SingleCluster {
			cluster++
		}
	}
	if want := perScope(SingleCluster); cluster != want {
		t.Errorf("%d single-cluster shapes, want %d", cluster, want)
	}
}

// TestRequests: the Accept header and query each shape sends.
func TestRequests(t *testing.T) {
	for _, c := range []struct {
		name   string
		p      Params
		accept string
		query  url.Values
	}{
		{"v1:0", Params{}, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", url.Values{"resourceVersion": {"0"}}},
		{"v1beta1::paged", Params{Limit: 25}, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1", url.Values{"limit": {"25"}}},
		{"v1:0:paged", Params{Limit: 25, Continue: "c"}, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", url.Values{"limit": {"25"}, "continue": {"c"}}},
		{"watch:v1beta1:0", Params{}, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1", url.Values{"resourceVersion": {"0"}, "watch": {"true"}}},
		{"watch:cluster:v1:exact", Params{ResourceVersion: "42"}, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", url.Values{"resourceVersion": {"42"}, "watch": {"true"}}},
		{"get:cluster:table:0", Params{}, "application/json;as=Table;g=meta.k8s.io;v=v1", url.Values{"resourceVersion": {"0"}}},
		{"cluster:protobuf::field-name", Params{}, "application/vnd.kubernetes.protobuf", url.Values{"fieldSelector": {"metadata.name=m-1"}}},
		{"watch:json::label", Params{}, "application/json", url.Values{"labelSelector": {"parity=even"}, "watch": {"true"}}},
	} {
		s := MustParse(c.name)
		if got := s.AcceptHeader(); got != c.accept {
			t.Errorf("%s: Accept %s, want %s", c.name, got, c.accept)
		}
		if got := s.Query(c.p); !cmp.Equal(got, c.query) {
			t.Errorf("%s %+v: query %v, want %v", c.name, c.p, got, c.query)
		}
	}
}

// TestOneEntry: the entry CONTRIBUTING.md shows ("Adding a request shape") is
// all a new selector takes: the matrix sends it in LISTs and WATCHes of both
// scopes, every Accept and resourceVersion (40 shapes per resource), and its
// names read back.
func TestOneEntry(t *testing.T) {
	saved := Selectors
	defer func() { Selectors = saved }()
	before := len(Matrix())
	Selectors = append(append([]Selector(nil), saved...), Selector{Name: "not-label", Label: "parity!=odd"})
	var added []Shape
	for _, s := range Matrix() {
		if s.Selector.Name == "not-label" {
			added = append(added, s)
		}
	}
	if len(added) != 40 || len(Matrix()) != before+40 {
		t.Errorf("the new selector made %d shapes (matrix %d -> %d), want 40", len(added), before, len(Matrix()))
	}
	for _, s := range added {
		if back, err := Parse(s.Name()); err != nil || back != s {
			t.Errorf("%s reads back as %+v, %v", s.Name(), back, err)
		}
	}
	if _, err := Parse("watch:cluster:json:0:not-label"); err != nil {
		t.Error(err)
	}
}
