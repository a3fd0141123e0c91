package hammer

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// fakeServer is a small in-memory API server speaking just enough of kcp's
// /clusters/<name>/ API for the hammer: create, get, update, merge patch,
// full and partial-metadata lists, partial watches. Its behaviours model the
// outcomes the hammer must report.
type fakeServer struct {
	t   *testing.T
	srv *httptest.Server

	// pollute models the pristine fork: wildcard partial items get
	// kcp.io/original-api-version "" written into the stored object itself.
	pollute bool
	// dieAfter closes the server after that many requests (0: never).
	dieAfter int64
	// fail5xxEvery answers every n-th LIST with 500 (0: never).
	fail5xxEvery int64
	// dropWrites answers writes as applied without storing them.
	dropWrites bool
	// noWildcardFull refuses full-object wildcard lists with 403.
	noWildcardFull bool
	// mixUpWatches models the pristine fork's watch cache as single-cluster
	// partial watchers see it: a wildcard watch wrote kcp.io/original-api-version
	// "" into the cached object, and their events carry it too.
	mixUpWatches bool

	requests atomic.Int64
	died     atomic.Bool
	mu       sync.Mutex
	objects  map[string]map[string]any // key: resource|cluster|ns|name
	rv       int64
	paths    map[string]int // method+" "+path (no query) → count, for assertions
	accepts  map[string]int
}

func newFakeServer(t *testing.T, configure func(*fakeServer)) *fakeServer {
	f := &fakeServer{t: t, objects: map[string]map[string]any{}, paths: map[string]int{}, accepts: map[string]int{}}
	if configure != nil {
		configure(f)
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.close)
	return f
}

func (f *fakeServer) close() {
	if f.died.CompareAndSwap(false, true) {
		f.srv.Listener.Close()
		f.srv.CloseClientConnections()
	}
}

func (f *fakeServer) config() *rest.Config { return &rest.Config{Host: f.srv.URL} }

type fakePath struct {
	cluster, group, version, resource, namespace, name string
}

func (p fakePath) gv() string {
	if p.group == "" {
		return p.version
	}
	return p.group + "/" + p.version
}

// customResource says whether the fork would find an apiVersion of the
// object's own (a CRD-backed resource) to write into the annotation.
func (p fakePath) customResource() bool { return Known[p.resource].CustomResource }

func parseFakePath(path string) (fakePath, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 4 || parts[0] != "clusters" {
		return fakePath{}, false
	}
	p := fakePath{cluster: parts[1]}
	rest := parts[2:]
	switch rest[0] {
	case "api":
		p.version, rest = rest[1], rest[2:]
	case "apis":
		if len(rest) < 4 {
			return fakePath{}, false
		}
		p.group, p.version, rest = rest[1], rest[2], rest[3:]
	default:
		return fakePath{}, false
	}
	if len(rest) >= 3 && rest[0] == "namespaces" && rest[2] != "" {
		p.namespace, rest = rest[1], rest[2:]
	}
	if len(rest) == 0 {
		return fakePath{}, false
	}
	p.resource = rest[0]
	if len(rest) > 1 {
		p.name = rest[1]
	}
	return p, true
}

func (f *fakeServer) key(p fakePath, ns, name string) string {
	return p.resource + "|" + p.cluster + "|" + ns + "|" + name
}

func (f *fakeServer) serve(w http.ResponseWriter, req *http.Request) {
	n := f.requests.Add(1)
	if f.dieAfter > 0 && n > f.dieAfter {
		// Kill the connection without an answer, then the listener.
		go f.close()
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		return
	}
	p, ok := parseFakePath(req.URL.Path)
	if !ok {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	f.mu.Lock()
	f.paths[req.Method+" "+req.URL.Path]++
	f.accepts[req.Header.Get("Accept")]++
	f.mu.Unlock()
	accept := req.Header.Get("Accept")
	q := req.URL.Query()
	switch {
	case req.Method == "GET" && p.name == "" && q.Get("watch") == "true":
		f.watch(w, p, accept)
	case req.Method == "GET" && p.name == "":
		if f.fail5xxEvery > 0 && n%f.fail5xxEvery == 0 {
			http.Error(w, `{"kind":"Status","code":500}`, http.StatusInternalServerError)
			return
		}
		f.list(w, p, accept, q.Get("labelSelector"), q.Get("limit"), q.Get("continue"))
	case req.Method == "GET":
		f.get(w, p)
	case req.Method == "POST":
		f.create(w, req, p)
	case req.Method == "PUT" || req.Method == "PATCH":
		f.write(w, req, p)
	case req.Method == "DELETE":
		f.mu.Lock()
		k := f.key(p, p.namespace, p.name)
		_, ok := f.objects[k]
		delete(f.objects, k)
		f.mu.Unlock()
		if !ok {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		writeJSON(w, 200, map[string]any{"kind": "Status", "status": "Success"})
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func metaOf(obj map[string]any) map[string]any {
	m, _ := obj["metadata"].(map[string]any)
	return m
}

func (f *fakeServer) create(w http.ResponseWriter, req *http.Request, p fakePath) {
	var obj map[string]any
	if err := json.NewDecoder(req.Body).Decode(&obj); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m := metaOf(obj)
	name, _ := m["name"].(string)
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.key(p, p.namespace, name)
	if _, ok := f.objects[k]; ok {
		writeJSON(w, http.StatusConflict, map[string]any{"kind": "Status", "code": 409, "reason": "AlreadyExists"})
		return
	}
	f.rv++
	m["resourceVersion"] = strconv.FormatInt(f.rv, 10)
	ann, _ := m["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		m["annotations"] = ann
	}
	ann[ClusterAnnotation] = p.cluster
	f.objects[k] = obj
	writeJSON(w, http.StatusCreated, obj)
}

func (f *fakeServer) get(w http.ResponseWriter, p fakePath) {
	f.mu.Lock()
	obj, ok := f.objects[f.key(p, p.namespace, p.name)]
	var body []byte
	if ok {
		body, _ = json.Marshal(obj)
	}
	f.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"kind": "Status", "code": 404})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (f *fakeServer) write(w http.ResponseWriter, req *http.Request, p fakePath) {
	body, _ := io.ReadAll(req.Body)
	var in map[string]any
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.key(p, p.namespace, p.name)
	cur, ok := f.objects[k]
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"kind": "Status", "code": 404})
		return
	}
	next := deepCopy(cur)
	labels, _ := metaOf(in)["labels"].(map[string]any)
	if req.Method == "PUT" {
		if metaOf(in)["resourceVersion"] != metaOf(cur)["resourceVersion"] {
			writeJSON(w, http.StatusConflict, map[string]any{"kind": "Status", "code": 409, "reason": "Conflict"})
			return
		}
		next = in
	} else {
		nl, _ := metaOf(next)["labels"].(map[string]any)
		if nl == nil {
			nl = map[string]any{}
		}
		maps.Copy(nl, labels)
		metaOf(next)["labels"] = nl
	}
	f.rv++
	metaOf(next)["resourceVersion"] = strconv.FormatInt(f.rv, 10)
	if !f.dropWrites {
		f.objects[k] = next
	}
	writeJSON(w, 200, next)
}

func deepCopy(obj map[string]any) map[string]any {
	b, _ := json.Marshal(obj)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// matching returns the stored objects a collection path selects, sorted.
func (f *fakeServer) matching(p fakePath, selector string) []map[string]any {
	var keys []string
	for k := range f.objects {
		parts := strings.Split(k, "|")
		if parts[0] != p.resource || (p.cluster != "*" && parts[1] != p.cluster) || (p.namespace != "" && parts[2] != p.namespace) {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []map[string]any
	for _, k := range keys {
		obj := f.objects[k]
		if selector != "" {
			l, v, _ := strings.Cut(selector, "=")
			labels, _ := metaOf(obj)["labels"].(map[string]any)
			if labels[l] != v {
				continue
			}
		}
		out = append(out, obj)
	}
	return out
}

// partialOf converts a stored object to a partial item; on a wildcard
// request it sets the annotation like the fork (pristine: into the stored
// object's own map, with "") or like the carry (typed objects: nothing; a
// custom resource: a copy with its own apiVersion).
func (f *fakeServer) partialOf(obj map[string]any, p fakePath, metaVersion string) map[string]any {
	m := metaOf(obj)
	if p.cluster == "*" {
		switch {
		case f.pollute:
			m["annotations"].(map[string]any)[OriginalAPIVersionAnnotation] = ""
		case p.customResource():
			m = maps.Clone(m)
			ann := maps.Clone(m["annotations"].(map[string]any))
			ann[OriginalAPIVersionAnnotation] = p.gv()
			m["annotations"] = ann
		}
	}
	return map[string]any{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/" + metaVersion, "metadata": m}
}

func metaVersionOf(accept string) string {
	if strings.Contains(accept, "v=v1beta1") {
		return "v1beta1"
	}
	return "v1"
}

func (f *fakeServer) list(w http.ResponseWriter, p fakePath, accept, selector, limit, cont string) {
	partial := strings.Contains(accept, "as=PartialObjectMetadataList")
	if p.cluster == "*" && !partial && f.noWildcardFull {
		writeJSON(w, http.StatusForbidden, map[string]any{"kind": "Status", "code": 403})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	objs := f.matching(p, selector)
	start, _ := strconv.Atoi(cont)
	end := len(objs)
	next := ""
	if l, _ := strconv.Atoi(limit); l > 0 && start+l < len(objs) {
		end = start + l
		next = strconv.Itoa(end)
	}
	if start > len(objs) {
		start = len(objs)
	}
	objs = objs[start:end]
	items := []any{}
	out := map[string]any{"metadata": map[string]any{"continue": next, "resourceVersion": strconv.FormatInt(f.rv, 10)}}
	if partial {
		mv := metaVersionOf(accept)
		for _, o := range objs {
			items = append(items, f.partialOf(o, p, mv))
		}
		out["kind"], out["apiVersion"] = "PartialObjectMetadataList", "meta.k8s.io/"+mv
	} else {
		for _, o := range objs {
			items = append(items, o)
		}
		out["kind"], out["apiVersion"] = "List", p.gv()
	}
	out["items"] = items
	b, err := json.Marshal(out)
	if err != nil {
		f.t.Errorf("fake server: %v", err)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func (f *fakeServer) watch(w http.ResponseWriter, p fakePath, accept string) {
	if !strings.Contains(accept, "as=PartialObjectMetadata;") {
		http.Error(w, "this fake serves partial watches only", http.StatusNotAcceptable)
		return
	}
	mv := metaVersionOf(accept)
	f.mu.Lock()
	var events [][]byte
	for _, o := range f.matching(p, "") {
		partial := f.partialOf(o, p, mv)
		if f.mixUpWatches && p.cluster != "*" {
			m := maps.Clone(partial["metadata"].(map[string]any))
			ann := maps.Clone(m["annotations"].(map[string]any))
			ann[OriginalAPIVersionAnnotation] = ""
			m["annotations"] = ann
			partial["metadata"] = m
		}
		b, _ := json.Marshal(map[string]any{"type": "ADDED", "object": partial})
		events = append(events, b)
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(200)
	for _, e := range events {
		_, _ = w.Write(append(e, '\n'))
	}
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	// Hold the watch open briefly, like a quiet server, then end it.
	time.Sleep(50 * time.Millisecond)
}

func (f *fakeServer) count(method, path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paths[method+" "+path]
}

func (f *fakeServer) stored(resource, cluster, ns, name string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.objects[resource+"|"+cluster+"|"+ns+"|"+name]
}

func (f *fakeServer) String() string { return fmt.Sprintf("fake server %s", f.srv.URL) }
