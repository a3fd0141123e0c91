package detector

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	cm "github.com/kcp-carry/kcp-carry/pkg/harness/cachemutation"
	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server/servertest"
)

// Every cell seeds cellObjects of its resource into a logical cluster of its
// own first, so a cell that writes into the cache finds objects nobody
// wrote before (the pristine fork writes each object once).
var cellObjects = []string{"m-1", "m-2"}

const (
	maxPages = 50
	// pageSize: a cell's cluster has len(cellObjects) objects of a
	// resource, the wildcard scope those of every cell so far.
	pageSize         = 1
	wildcardPageSize = 100
)

// matrixResources are the resources every shape of the matrix is sent for:
// a typed built-in with a cluster-scoped registry and a namespaced one.
var matrixResources = []resource{clusterRoles, configMaps}

// cell is one request shape of the matrix, for one resource.
type cell struct {
	resource string
	shape    requestshape.Shape
}

func (c cell) String() string { return c.resource + " " + c.shape.Name() }

// matrixRun is what runMatrix did: the cells, and which cell sent each
// request (path?query and Accept, as the detector reports them).
type matrixRun struct {
	cells     []cell
	byRequest map[string]cell
	requests  int
	watches   int
}

func requestKey(path, query, accept string) string { return path + "?" + query + "|" + accept }

func (m *matrixRun) sent(c cell, path string, q url.Values, accept string) {
	m.byRequest[requestKey(path, q.Encode(), accept)] = c
}

// cellOf is the cell that sent the request a finding names.
func (m *matrixRun) cellOf(f cm.Finding) (cell, bool) {
	c, ok := m.byRequest[requestKey(f.Request.Path, f.Request.Query, f.Request.Accept)]
	return c, ok
}

// selectedObjects are the cell's objects (cellObjects, labelled as
// seedResource labels them) that sel selects.
func selectedObjects(sel requestshape.Selector, cluster string) []string {
	var out []string
	for _, name := range cellObjects {
		if sel.Selects(name, seedLabels(cluster, name)) {
			out = append(out, name)
		}
	}
	return out
}

// runMatrix sends the matrix to s, one request at a time: every shape of
// requestshape.Matrix() (LIST, GET and WATCH × wildcard and single-cluster
// scope × Accept json, protobuf, PartialObjectMetadata v1 and v1beta1, Table
// × resourceVersion "" and "0" × plain, label- and field-selected and (LIST)
// paginated; no wildcard GET: kcp only serves list and watch in "*",
// WithWildcardListWatchGuard) for ClusterRoles and ConfigMaps. Each cell
// first seeds fresh objects (cellObjects) in a cluster of its own.
//
// exact makes the attribution deterministic: the detector names the request
// that held an object when it saw the change, which is the writer only if no
// other request holds it then. So before each cell's own requests the
// detector must have compared, at their completion, the reads of the
// previous cell and of the cell's helper LIST (which holds the objects the
// cell's request is about to write, and whose completion comparison runs
// asynchronously, late on a loaded machine). It costs /metrics scrapes.
func runMatrix(t *testing.T, s *server.Shard, exact bool) *matrixRun {
	t.Helper()
	c := newClient(t, s)
	m := &matrixRun{byRequest: map[string]cell{}}
	start := time.Now()
	for _, r := range matrixResources {
		for _, shape := range requestshape.Matrix() {
			// The previous cell's reads are compared, fresh objects in a
			// new cluster are in the cache.
			if exact {
				waitIdle(t, s)
			}
			cl := cell{resource: r.name, shape: shape}
			m.cells = append(m.cells, cl)
			cluster := fmt.Sprintf("m%04d", len(m.cells))
			seedResource(t, s, r, cluster, cellObjects)
			// A consistent LIST waits until the cache has them (a
			// resourceVersion "0" read would not). Plain JSON in one
			// cluster: no fork writes on this path, and a finding it caused
			// would name no cell and fail.
			c.mustGet(t, r.collectionPath(cluster), url.Values{}, acceptJSON)
			if exact {
				waitIdle(t, s)
			}
			scope := cluster
			if shape.Scope == requestshape.Wildcard {
				scope = "*"
			}
			path, accept := r.collectionPath(scope), shape.AcceptHeader()
			selected := selectedObjects(shape.Selector, cluster)
			if len(selected) == 0 {
				t.Fatalf("%s: the selector selects none of the cell's objects %v (requestshape.Selectors)", cl, cellObjects)
			}

			switch shape.Verb {
			case requestshape.List:
				limit := int64(pageSize)
				if shape.Scope == requestshape.Wildcard {
					limit = wildcardPageSize
				}
				total, cont := 0, ""
				for page := 0; ; page++ {
					if page == maxPages {
						t.Fatalf("%s: more than %d pages", cl, maxPages)
					}
					q := shape.Query(requestshape.Params{Limit: limit, Continue: cont})
					m.sent(cl, path, q, accept)
					resp := c.mustGet(t, path, q, accept)
					m.requests++
					n, next, err := listMeta(resp)
					if err != nil {
						t.Fatalf("%s: %v", cl, err)
					}
					total += n
					if cont = next; !shape.Paged || cont == "" {
						break
					}
				}
				if total < len(selected) {
					t.Errorf("%s: %d items, want at least %d (%v)", cl, total, len(selected), selected)
				}

			case requestshape.Get:
				p, q := r.objectPath(scope, cellObjects[0]), shape.Query(requestshape.Params{})
				m.sent(cl, p, q, accept)
				c.mustGet(t, p, q, accept)
				m.requests++

			case requestshape.Watch:
				// A live event for an object the watch selects.
				tok := fmt.Sprintf("tok%06d", len(m.cells))
				q := shape.Query(requestshape.Params{})
				m.sent(cl, path, watchQuery(q), accept)
				c.watchUntil(t, path, q, accept, func() { touch(t, s, r, cluster, selected[0], tok) }, tok)
				m.watches++

			default:
				t.Fatalf("%s: the matrix does not send %s", cl, shape.Verb)
			}
		}
	}
	waitIdle(t, s)
	t.Logf("matrix: %d cells, %d LIST/GET requests and %d watches in %s", len(m.cells), m.requests, m.watches, time.Since(start).Round(time.Millisecond))
	// Every resource in every shape of the catalogue (170 shapes, 340 cells
	// today): a cell the matrix skipped would go unaudited.
	if wantCells := len(matrixResources) * len(requestshape.Matrix()); len(m.cells) != wantCells {
		t.Errorf("the matrix sent %d cells, want %d", len(m.cells), wantCells)
	}
	return m
}

// TestPatchedMatrixIsClean: on the patched fork (-race build) no request of
// the matrix writes into the watch cache. The shard runs in servertest's
// test mode: any finding fails the test. The detector has teeth here: the
// metrics show it compared objects shared with the cache for every verb and
// resource, TestPristineMatrixAudit runs the same matrix on the pristine
// fork and sees exactly the wildcard partial-metadata LIST cells write, and
// TestPristineOneWildcardPartialListIsCaught is the one-request control.
func TestPatchedMatrixIsClean(t *testing.T) {
	s := startShard(t, servertest.PatchedShard(), false)
	m := runMatrix(t, s, false)

	if fs := settledFindings(t, s); len(fs) != 0 {
		var b strings.Builder
		for _, f := range fs {
			c, _ := m.cellOf(f)
			fmt.Fprintf(&b, "  [%s] %s\n", c, f)
		}
		t.Errorf("the patched fork wrote into the watch cache %d times:\n%s", len(fs), b.String())
	}
	requireTeeth(t, s)
	requirePatchDoesNotPersist(t, s)
	if strings.Contains(s.Stderr(), server.SigDataRace) {
		t.Errorf("the race detector reported a DATA RACE in the shard:\n%s", s.Fatal())
	}
}

// requireTeeth fails unless the detector compared objects shared with the
// cache for every resource and verb, and classified GETs served by etcd as
// private.
func requireTeeth(t *testing.T, s *server.Shard) {
	t.Helper()
	for _, r := range matrixResources {
		for _, op := range []string{"list", "get", "watch"} {
			if n := handouts(t, s, r, op, cm.SharingShared); n == 0 {
				t.Errorf("no %s %s hand-out was shared with the cache: the matrix did not exercise the detector", r.name, op)
			} else {
				t.Logf("%s %s: %v hand-outs shared with the cache (tracked), %v private, %v unknown",
					r.name, op, n, handouts(t, s, r, op, cm.SharingPrivate), handouts(t, s, r, op, cm.SharingUnknown))
			}
		}
		if n := handouts(t, s, r, "get", cm.SharingPrivate); n == 0 {
			t.Errorf("no %s GET was classified private: GETs without resourceVersion are served by etcd", r.name)
		}
	}
	if n := metric(t, s, "comparisons_total", nil); n == 0 {
		t.Error("the detector compared nothing")
	}
}

// TestPristineMatrixAudit runs the matrix on the fork as kcp v0.32.3 ships
// it and attributes every finding to the cell whose request held the
// object. It asserts what docs/read-path-audit.md says: exactly the LIST
// cells with a wildcard scope and a PartialObjectMetadataList Accept (v1 and
// v1beta1, every resourceVersion, selector and page) write into the cache,
// always metadata.annotations["kcp.io/original-api-version"]; no GET, no
// WATCH, no Table, no single-cluster cell does.
func TestPristineMatrixAudit(t *testing.T) {
	s := startShard(t, server.ShardBuild{Pristine: true}, true)
	m := runMatrix(t, s, true)
	fs := waitFindings(t, s, 1)

	perCell := map[cell]int{}
	for _, f := range fs {
		c, ok := m.cellOf(f)
		if !ok {
			t.Errorf("a finding names a request the matrix did not send: %s", f)
			continue
		}
		perCell[c]++
		if len(f.Paths) != 1 || f.Paths[0] != leakPath {
			t.Errorf("[%s] changed %v, want [%s]", c, f.Paths, leakPath)
		}
	}
	var table strings.Builder
	for _, c := range m.cells {
		want := c.shape.Verb == requestshape.List && c.shape.Scope == requestshape.Wildcard && c.shape.Accept.Partial()
		got := perCell[c]
		if want != (got > 0) {
			t.Errorf("[%s] %d findings, want findings: %v", c, got, want)
		}
		if got > 0 {
			fmt.Fprintf(&table, "  %-70s %d objects written\n", c, got)
		}
	}
	t.Logf("pristine fork: %d findings in %d of %d cells:\n%s", len(fs), len(perCell), len(m.cells), table.String())
	requireTeeth(t, s)
}
