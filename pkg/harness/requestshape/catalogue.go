package requestshape

// The catalogue. Everything the harness sends as a read request is a Shape
// built from these entries; CONTRIBUTING.md ("Adding a request shape") says
// how to extend it.
//
// Where each part draws from:
//   - the detector matrix (test/detector) sends Matrix(): every valid
//     combination of Verbs × Scopes × Accepts × ResourceVersions × (Selectors,
//     or a paged LIST), for each resource;
//   - the hammer (pkg/harness/hammer) parses its listers' shapes
//     (--lister-shapes, evidence's --step-lister and --kcp-lister) with
//     Parse, and sends HammerListers, HammerWatchers and MixedWatchers;
//   - the benchmarks (test/bench) serve BenchList and BenchWatch.

// Verbs, in the matrix's order.
var Verbs = []Verb{List, Get, Watch}

// Scopes, in the matrix's order.
var Scopes = []Scope{Wildcard, SingleCluster}

// Accepts are the media types a shape can ask for, in the matrix's order.
// An entry is either a partial-metadata kind (MetaVersion) or a plain media
// type (Media); its Name spells it in shape names.
var Accepts = []Accept{JSON, Protobuf, PartialV1, PartialV1beta1, Table}

// The Accept entries other code names.
var (
	JSON           = Accept{Name: "json", Media: "application/json"}
	Protobuf       = Accept{Name: "protobuf", Media: "application/vnd.kubernetes.protobuf"}
	PartialV1      = Accept{Name: "v1", MetaVersion: "v1"}
	PartialV1beta1 = Accept{Name: "v1beta1", MetaVersion: "v1beta1"}
	Table          = Accept{Name: "table", Media: "application/json;as=Table;g=meta.k8s.io;v=v1"}
)

// ResourceVersions the matrix sends: a consistent read and a read from the
// watch cache. (RVExact is for watches that start where a LIST left off.)
var ResourceVersions = []string{RVConsistent, RVAny}

// Selectors of LISTs and WATCHes, in the matrix's order. They are written
// against the objects the detector matrix seeds in each cell's logical
// cluster (test/detector: m-1 labelled parity=odd, m-2 parity=even); each
// must select at least one of them. A field selector that names one object
// (metadata.name=...) is refused in the wildcard scope (Shape.Validate).
var Selectors = []Selector{
	Plain,
	{Name: "label", Label: "parity=even"},
	{Name: "field", Field: "metadata.name!=m-0"},
	{Name: "field-name", Field: "metadata.name=m-1"},
}

// The shapes the hammer and the benchmarks send, by name (see Shape.Name).
var (
	// HammerListers is the hammer's default lister mix, cycled over the
	// listers: the first goes through kcp's metadata client, and the first
	// eight cover v1 and v1beta1, resourceVersion "" and "0", paged and not.
	// Its order is part of the evidence (evidence/duel.json): keep it.
	HammerListers = mustParseAll("kcp:0", "v1beta1:", "v1:0", "v1beta1:0:paged", "v1:", "v1beta1:0", "v1::paged", "kcp:")
	// HammerWatchers: watcher i sends HammerWatchers[i%2], from
	// resourceVersion 0, so the watch cache replays every object through the
	// per-object conversion.
	HammerWatchers = mustParseAll("watch:v1:0", "watch:v1beta1:0")
	// MixedWatchers is one group of the hammer's mixed watchers (check (d)):
	// a wildcard and a single-cluster watch at each meta version, all open
	// at once from the resourceVersion of a fresh LIST.
	MixedWatchers = mustParseAll("watch:v1:exact", "watch:cluster:v1:exact", "watch:v1beta1:exact", "watch:cluster:v1beta1:exact")
	// StepLister is the shape of every lister in evidence's single-lister
	// rounds and scaling steps, and KCPRatioLister the partial LIST of its
	// real-kcp ratio, unless their flags say otherwise.
	StepLister     = MustParse("v1:0")
	KCPRatioLister = MustParse("v1:0")
	// BenchList and BenchWatch are what test/bench serves through the
	// fork's handlers.
	BenchList  = MustParse("v1:")
	BenchWatch = MustParse("watch:v1:")
)
