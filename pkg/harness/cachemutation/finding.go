package cachemutation

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Finding is one read-path write into memory shared with the cache.
type Finding struct {
	// Resource is the group/resource of the storage, e.g.
	// "clusterroles.rbac.authorization.k8s.io" or "configmaps".
	Resource string `json:"resource"`
	// Cluster is the object's logical cluster (Options.Cluster), if known.
	Cluster   string `json:"cluster,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
	// ResourceVersion is the object's resourceVersion when it was handed out.
	ResourceVersion string `json:"resourceVersion"`
	// Paths are the changed fields, in JSON field names, e.g.
	// metadata.annotations["kcp.io/original-api-version"] (at most 32).
	Paths []string `json:"paths"`
	// Diff is go-cmp's diff of the object (-at hand-out +now).
	Diff string `json:"diff"`
	// Request is the request that held the object while it changed.
	Request Request `json:"request"`
	// HandOut is the storage operation that handed the object out: get,
	// list or watch.
	HandOut string `json:"handOut"`
	// Sharing tells how the detector knew the object was shared with the
	// cache: "shared" (a re-read through the cache returned the same memory,
	// or a watch event wrapped the cached object) or "unknown" (the re-read
	// did not find the same object at the same resourceVersion).
	Sharing string `json:"sharing"`
	// Trigger is the comparison that saw the change: "completion" (the
	// request's context ended), "periodic" or "expiry".
	Trigger    string    `json:"trigger"`
	HandedOut  time.Time `json:"handedOut"`
	DetectedAt time.Time `json:"detectedAt"`
}

// Request describes the request that held an object.
type Request struct {
	// Verb is the Kubernetes verb (get, list, watch) from the request info,
	// or the storage operation when there is no request info.
	Verb string `json:"verb"`
	// Method, Path, Query and Accept are recorded by WithRequest, outermost
	// in the handler chain: Path is the path as the client sent it, e.g.
	// /clusters/*/apis/rbac.authorization.k8s.io/v1/clusterroles. Without
	// WithRequest, Path is the request info's path and the others are empty.
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	Query  string `json:"query,omitempty"`
	Accept string `json:"accept,omitempty"`
}

// String is a one-line summary of f.
func (f Finding) String() string {
	obj := f.Name
	if f.Namespace != "" {
		obj = f.Namespace + "/" + f.Name
	}
	if f.Cluster != "" {
		obj = f.Cluster + "|" + obj
	}
	req := f.Request.Verb + " " + f.Request.Path
	if f.Request.Query != "" {
		req += "?" + f.Request.Query
	}
	if f.Request.Accept != "" {
		req += fmt.Sprintf(" (Accept: %s)", f.Request.Accept)
	}
	return fmt.Sprintf("%s %s resourceVersion %s: %s changed while held by %s [hand-out %s, sharing %s, seen on %s]",
		f.Resource, obj, f.ResourceVersion, strings.Join(f.Paths, ", "), req, f.HandOut, f.Sharing, f.Trigger)
}

// LinePrefix starts the machine-readable line FormatLine writes.
const LinePrefix = "cache-mutation-finding: "

// FormatLine renders f as one line: LinePrefix followed by JSON and a
// newline. ParseFindings reads such lines back, e.g. from a server's stderr.
func FormatLine(f Finding) string {
	b, err := json.Marshal(f)
	if err != nil {
		// Finding has only strings, slices of strings and times.
		panic(fmt.Sprintf("cachemutation: encoding a finding: %v", err))
	}
	return LinePrefix + string(b) + "\n"
}

// ParseFindings returns the findings in text written by FormatLine; other
// lines are ignored. A line with the prefix that does not decode is an error.
func ParseFindings(text string) ([]Finding, error) {
	var out []Finding
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		i := strings.Index(line, LinePrefix)
		if i < 0 {
			continue
		}
		var f Finding
		if err := json.Unmarshal([]byte(line[i+len(LinePrefix):]), &f); err != nil {
			return out, fmt.Errorf("line %d: cache mutation finding: %w", n, err)
		}
		out = append(out, f)
	}
	return out, sc.Err()
}
