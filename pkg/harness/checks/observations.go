package checks

import (
	"cmp"
	"fmt"
	"strconv"
)

// Observations are what one hammer run saw, the input of every check's
// Result: what the run asked for, how far it got, the after-load reads and
// the writers' ledger. The hammer fills them in; it judges nothing itself.
type Observations struct {
	// Probe: a sequential probe ran instead of the load.
	Probe bool
	// Wildcard: the load's listers and watchers sent wildcard requests.
	Wildcard bool
	// The workers the run's options asked for.
	Listers, Watchers, MixedWatchers, Writers int
	// NoAfterChecks: the options skip the after-load reads.
	NoAfterChecks bool

	Died bool
	// Loaded: the load (or probe) ran; false when the run stopped before it.
	Loaded bool
	// ReadBack is what the after-load reads saw; nil when they did not run,
	// and ReadBackSkipped then says why.
	ReadBack        *ReadBack
	ReadBackSkipped string
	// Writes holds the writers' writes.
	Writes *Ledger
}

// noReadBack is why the after-load reads, which checks (b) and (c) judge,
// have nothing to show: the server died, or they did not run; "" when they
// ran.
func (o *Observations) noReadBack() string {
	switch {
	case o.Died:
		return "the server died"
	case o.ReadBack == nil && o.ReadBackSkipped != "":
		return o.ReadBackSkipped
	case o.ReadBack == nil:
		return "the after-load reads did not run"
	}
	return ""
}

// ReadBack is what the after-load reads saw: every seeded object (and the
// other objects in the same lists) read back in full, several ways.
type ReadBack struct {
	Sources []Source
	// Seeded are the keys of the objects the run seeded, in seeding order.
	Seeded []string
}

// quorum is the read of the objects' final state from etcd.
func (rb *ReadBack) quorum() *Source {
	for i := range rb.Sources {
		if rb.Sources[i].Quorum {
			return &rb.Sources[i]
		}
	}
	return nil
}

// Source is one way of reading the objects back.
type Source struct {
	Name string
	// Ran is false when the server refuses this kind of read; Note says why
	// (or, when it ran, what failed).
	Ran  bool
	Note string
	// Quorum: read from etcd, the objects' final state (check (c)).
	Quorum bool
	// Objects are what the reads returned; Missing counts seeded objects
	// that were not in an answer or could not be read.
	Objects []Object
	Missing int64
}

// Object is one object as a read returned it.
type Object struct {
	// Key names the object ("configmaps a|default/x").
	Key    string
	Seeded bool
	// OriginalAPIVersion is its kcp.io/original-api-version (nil: absent).
	OriginalAPIVersion *string
	// Written is the value of the label the writers change ("" if none).
	Written string
}

// Worker kinds that receive partial-metadata items.
type Worker int

const (
	Lister       Worker = iota // a lister, or the sequential probe
	Watcher                    // a wildcard (or, in cluster scope, single-cluster) watcher
	MixedWatcher               // a watch of a mixed-watcher group
)

// Partial is one partial-metadata item a worker of the load received.
type Partial struct {
	Op      string // the operation, e.g. `list v1 rv=""`
	Worker  Worker
	Cluster string // the request's logical cluster, "*" for a wildcard request
	// Item is the item's resource, name, namespace and kcp.io/cluster
	// annotation, OriginalAPIVersion its kcp.io/original-api-version (nil:
	// absent).
	Item               ObjectKey
	OriginalAPIVersion *string
	// Want is what the contract asks of the item's resource on a wildcard
	// item.
	Want Expectation
}

// sample describes a wrong item for a check's samples: where it came from,
// its annotation as shown and what was wanted.
func (p Partial) sample(shown, want string) string {
	return fmt.Sprintf("%s: %s: %s=%s, want %s", p.Op, p.Item, OriginalAPIVersionAnnotation, shown, want)
}

// ObjectKey names one object in one logical cluster.
type ObjectKey struct {
	Resource  string `json:"resource"` // e.g. "clusterroles"
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String is "resource cluster|namespace/name" ("?" for an unknown cluster).
func (k ObjectKey) String() string {
	s := k.Resource + " " + cmp.Or(k.Cluster, "?") + "|"
	if k.Namespace != "" {
		s += k.Namespace + "/"
	}
	return s + k.Name
}

// Expectation is what kcp.io/original-api-version must be on a wildcard
// partial item of a resource: Value when Present, otherwise no key at all
// (never "").
type Expectation struct {
	Value   string
	Present bool
}

// How a sample spells an absent annotation: received, and wanted.
const (
	MissingValue = "<missing>"
	noAnnotation = "no such annotation"
)

// Judge compares the annotation of one wildcard partial item (nil: absent)
// with the expectation, and spells both for a sample.
func (e Expectation) Judge(got *string) (shown, want string, ok bool) {
	shown, want = MissingValue, noAnnotation
	if e.Present {
		want = strconv.Quote(e.Value)
	}
	if got != nil {
		shown = strconv.Quote(*got)
	}
	return shown, want, (got != nil) == e.Present && (got == nil || *got == e.Value)
}
