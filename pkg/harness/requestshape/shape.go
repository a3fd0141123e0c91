// Package requestshape is the catalogue of the read requests the harness
// sends (catalogue.go): a Shape is a verb, a scope, an Accept, a
// resourceVersion, paging, a selector and the client that sends it. A shape
// builds its own Accept header and query, has one name, and knows whether it
// is a request kcp serves. The hammer, the detector matrix and the
// benchmarks all draw their shapes from the catalogue.
package requestshape

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kcp-carry/kcp-carry/pkg/harness/partialmeta"
)

// Verb is the kind of read.
type Verb string

const (
	List  Verb = "list"
	Get   Verb = "get"
	Watch Verb = "watch"
)

// Scope is where a request goes.
type Scope string

const (
	// Wildcard is /clusters/*/...: every logical cluster at once.
	Wildcard Scope = "wildcard"
	// SingleCluster is /clusters/<name>/...: one logical cluster.
	SingleCluster Scope = "cluster"
)

// The resourceVersions of a shape.
const (
	// RVConsistent sends no resourceVersion: a consistent read.
	RVConsistent = ""
	// RVAny is resourceVersion=0: any version, from the watch cache.
	RVAny = "0"
	// RVExact is a resourceVersion the sender read before
	// (Params.ResourceVersion): a watch from it sees only what happens after.
	RVExact = "exact"
)

// Accept is what a shape asks the server to answer with.
type Accept struct {
	// Name spells the Accept in shape names.
	Name string
	// Media is the Accept header of every verb, for a plain media type.
	Media string
	// MetaVersion, for a partial-metadata Accept, is the meta.k8s.io version
	// of PartialObjectMetadata(List) asked for.
	MetaVersion string
}

// Partial says whether a asks for partial object metadata.
func (a Accept) Partial() bool { return a.MetaVersion != "" }

// Header is a's Accept header for verb: a partial-metadata LIST asks for
// PartialObjectMetadataList, a GET or WATCH for PartialObjectMetadata.
func (a Accept) Header(verb Verb) string {
	switch {
	case !a.Partial():
		return a.Media
	case verb == List:
		return partialmeta.ListAccept(a.MetaVersion)
	default:
		return partialmeta.ObjectAccept(a.MetaVersion)
	}
}

// Selector is a LIST's or WATCH's label and field selector.
type Selector struct {
	// Name spells the selector in shape names; Plain, the zero Selector,
	// selects everything and is not spelled.
	Name  string
	Label string // labelSelector
	Field string // fieldSelector
}

// Plain, the zero Selector, selects everything.
var Plain = Selector{}

// namesOneObject says whether s's field selector pins metadata.name, which
// makes the registry read one key instead of listing.
func (s Selector) namesOneObject() bool {
	f, err := fields.ParseSelector(s.Field)
	if err != nil {
		return false
	}
	_, ok := f.RequiresExactMatch("metadata.name")
	return ok
}

func (s Selector) validate() error {
	if _, err := labels.Parse(s.Label); err != nil {
		return fmt.Errorf("selector %s: label selector %q: %w", s.Name, s.Label, err)
	}
	if _, err := fields.ParseSelector(s.Field); err != nil {
		return fmt.Errorf("selector %s: field selector %q: %w", s.Name, s.Field, err)
	}
	return nil
}

// Selects says whether s selects an object named name with labels l (a
// field selector sees metadata.name only).
func (s Selector) Selects(name string, l map[string]string) bool {
	ls, err := labels.Parse(s.Label)
	if err != nil {
		return false
	}
	fs, err := fields.ParseSelector(s.Field)
	if err != nil {
		return false
	}
	return ls.Matches(labels.Set(l)) && fs.Matches(fields.Set{"metadata.name": name})
}

// Shape is one kind of read request.
type Shape struct {
	Verb   Verb
	Scope  Scope
	Accept Accept
	// ResourceVersion is RVConsistent, RVAny or RVExact.
	ResourceVersion string
	// Paged lists with limit and continue.
	Paged    bool
	Selector Selector
	// KCPMetadataClient sends the request through
	// github.com/kcp-dev/kcp/pkg/metadata, the client that sends wildcard
	// partial-metadata LISTs in production (always meta.k8s.io/v1).
	KCPMetadataClient bool
}

// Name is the shape's one spelling, in reports, logs and flags:
//
//	[get:|watch:][cluster:]<accept>:<rv>[:paged][:<selector>]
//
// A LIST and the wildcard scope are the defaults and not spelled; <accept> is
// an Accept's name (v1 and v1beta1 are partial metadata at that meta.k8s.io
// version) or kcp (partial metadata v1 through kcp's metadata client); <rv> is
// empty, 0 or exact; the plain selector is not spelled. So a wildcard
// partial-metadata LIST at meta.k8s.io/v1beta1 from the watch cache, paged, is
// "v1beta1:0:paged", and a single-cluster Table WATCH selecting by label is
// "watch:cluster:table::label".
func (s Shape) Name() string {
	var b strings.Builder
	if s.Verb != List {
		b.WriteString(string(s.Verb) + ":")
	}
	if s.Scope != Wildcard {
		b.WriteString(string(s.Scope) + ":")
	}
	if s.KCPMetadataClient {
		b.WriteString("kcp")
	} else {
		b.WriteString(s.Accept.Name)
	}
	b.WriteString(":" + s.ResourceVersion)
	if s.Paged {
		b.WriteString(":paged")
	}
	if s.Selector != Plain {
		b.WriteString(":" + s.Selector.Name)
	}
	return b.String()
}

func (s Shape) String() string { return s.Name() }

// AcceptHeader is the Accept header s sends.
func (s Shape) AcceptHeader() string { return s.Accept.Header(s.Verb) }

// Validate says why kcp does not serve s as a request of its kind, or why the
// harness cannot send it.
func (s Shape) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch s.Verb {
	case List, Get, Watch:
	default:
		bad("verb %q is not one of list, get, watch", s.Verb)
	}
	switch s.Scope {
	case Wildcard, SingleCluster:
	default:
		bad("scope %q is not one of wildcard, cluster", s.Scope)
	}
	if a, ok := acceptNamed(s.Accept.Name); !ok || a != s.Accept {
		bad("accept %+v is not in the catalogue (Accepts)", s.Accept)
	}
	if sel, ok := selectorNamed(s.Selector.Name); !ok || sel != s.Selector {
		bad("selector %+v is not in the catalogue (Selectors)", s.Selector)
	}
	switch s.ResourceVersion {
	case RVConsistent, RVAny:
	case RVExact:
		if s.Verb != Watch {
			bad("resourceVersion %q (one read before) is for watches", RVExact)
		}
	default:
		bad("resourceVersion %q is not one of \"\", 0, exact", s.ResourceVersion)
	}
	if s.Paged && s.Verb != List {
		bad("only a LIST is paged")
	}
	if err := s.Selector.validate(); err != nil {
		errs = append(errs, err)
	}
	if s.Verb == Get {
		if s.Scope == Wildcard {
			bad("no wildcard GET: kcp serves only list and watch in /clusters/* (WithWildcardListWatchGuard)")
		}
		if s.Selector != Plain {
			bad("a GET names its object: no selector")
		}
	}
	if s.Scope == Wildcard && s.Selector.namesOneObject() {
		bad("selector %s (%s) names one object, which makes the registry read one key: in /clusters/* that is no object (docs/read-path-audit.md), so single-cluster scope only", s.Selector.Name, s.Selector.Field)
	}
	if s.KCPMetadataClient && (s.Accept != PartialV1 || s.Verb != List) {
		bad("kcp's metadata client sends partial-metadata LISTs at meta.k8s.io/v1 only")
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("request shape %s: %w", s.Name(), errors.Join(errs...))
}

// Params are what varies from one request of a shape to the next.
type Params struct {
	// Limit is the page size of a paged LIST.
	Limit int64
	// Continue is the continue token of a LIST's next page.
	Continue string
	// ResourceVersion is the resourceVersion of an RVExact shape.
	ResourceVersion string
}

// ListOptions are s's list options for one request: its selector, its
// resourceVersion (not on a next page, where the apiserver refuses it beside
// a continue token), and, paged, limit and continue.
func (s Shape) ListOptions(p Params) metav1.ListOptions {
	o := metav1.ListOptions{LabelSelector: s.Selector.Label, FieldSelector: s.Selector.Field, Watch: s.Verb == Watch}
	if p.Continue == "" {
		o.ResourceVersion = s.ResourceVersion
		if s.ResourceVersion == RVExact {
			o.ResourceVersion = p.ResourceVersion
		}
	}
	if s.Paged {
		o.Limit, o.Continue = p.Limit, p.Continue
	}
	return o
}

// Query is s's query for one request (ListOptions as URL parameters).
func (s Shape) Query(p Params) url.Values {
	o := s.ListOptions(p)
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("labelSelector", o.LabelSelector)
	set("fieldSelector", o.FieldSelector)
	set("resourceVersion", o.ResourceVersion)
	if o.Limit > 0 {
		q.Set("limit", strconv.FormatInt(o.Limit, 10))
	}
	set("continue", o.Continue)
	if o.Watch {
		q.Set("watch", "true")
	}
	return q
}

// Parse reads a shape's Name and validates the shape.
func Parse(name string) (Shape, error) {
	s, err := parse(strings.TrimSpace(name))
	if err != nil {
		return Shape{}, fmt.Errorf("request shape %q: %w (want [get:|watch:][cluster:]<accept>:<rv>[:paged][:<selector>], see pkg/harness/requestshape)", name, err)
	}
	if err := s.Validate(); err != nil {
		return Shape{}, err
	}
	return s, nil
}

func parse(name string) (Shape, error) {
	parts := strings.Split(name, ":")
	s := Shape{Verb: List, Scope: Wildcard}
	if len(parts) > 0 && (parts[0] == string(Get) || parts[0] == string(Watch)) {
		s.Verb, parts = Verb(parts[0]), parts[1:]
	}
	if len(parts) > 0 && parts[0] == string(SingleCluster) {
		s.Scope, parts = SingleCluster, parts[1:]
	}
	if len(parts) < 2 {
		return Shape{}, errors.New("no <accept>:<rv>")
	}
	if parts[0] == "kcp" {
		s.Accept, s.KCPMetadataClient = PartialV1, true
	} else if a, ok := acceptNamed(parts[0]); ok {
		s.Accept = a
	} else {
		return Shape{}, fmt.Errorf("accept %q is not kcp or one of %s", parts[0], acceptNames())
	}
	s.ResourceVersion, parts = parts[1], parts[2:]
	if len(parts) > 0 && parts[0] == "paged" {
		s.Paged, parts = true, parts[1:]
	}
	if len(parts) > 0 {
		sel, ok := selectorNamed(parts[0])
		if !ok || sel == Plain {
			return Shape{}, fmt.Errorf("%q is not paged or a selector (%s)", parts[0], selectorNames())
		}
		s.Selector, parts = sel, parts[1:]
	}
	if len(parts) > 0 {
		return Shape{}, fmt.Errorf("unexpected %q at the end", strings.Join(parts, ":"))
	}
	return s, nil
}

// MustParse is Parse for the catalogue's own entries.
func MustParse(name string) Shape {
	s, err := Parse(name)
	if err != nil {
		panic(err)
	}
	return s
}

func mustParseAll(names ...string) []Shape {
	out := make([]Shape, len(names))
	for i, n := range names {
		out[i] = MustParse(n)
	}
	return out
}

// ParseList parses comma-separated shape names; empty entries are skipped.
func ParseList(names string) ([]Shape, error) {
	var out []Shape
	for _, n := range strings.Split(names, ",") {
		if strings.TrimSpace(n) == "" {
			continue
		}
		s, err := Parse(n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func acceptNamed(name string) (Accept, bool) {
	for _, a := range Accepts {
		if a.Name == name {
			return a, true
		}
	}
	return Accept{}, false
}

func acceptNames() string {
	var n []string
	for _, a := range Accepts {
		n = append(n, a.Name)
	}
	return strings.Join(n, ", ")
}

func selectorNamed(name string) (Selector, bool) {
	for _, s := range Selectors {
		if s.Name == name {
			return s, true
		}
	}
	return Selector{}, false
}

func selectorNames() string {
	var n []string
	for _, s := range Selectors {
		if s != Plain {
			n = append(n, s.Name)
		}
	}
	return strings.Join(n, ", ")
}

// Matrix is every valid shape the catalogue's dimensions make, in this order:
// scope, Accept, resourceVersion, then LISTs (each selector, then paged),
// GETs, WATCHes (each selector). Pages come with the plain selector only; the
// kcp metadata client and RVExact are not in it (the one is a client of the
// same requests, the other needs a resourceVersion read first).
func Matrix() []Shape {
	var out []Shape
	for _, scope := range Scopes {
		for _, accept := range Accepts {
			for _, rv := range ResourceVersions {
				for _, verb := range Verbs {
					base := Shape{Verb: verb, Scope: scope, Accept: accept, ResourceVersion: rv}
					forms := make([]Shape, 0, len(Selectors)+1)
					for _, sel := range Selectors {
						s := base
						s.Selector = sel
						forms = append(forms, s)
					}
					paged := base
					paged.Paged = true
					forms = append(forms, paged)
					for _, s := range forms {
						if s.Validate() == nil {
							out = append(out, s)
						}
					}
				}
			}
		}
	}
	return out
}
