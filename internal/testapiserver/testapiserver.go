// Package testapiserver is a small fake of a kcp shard for scrub's tests:
// /version, discovery in /clusters/root (core v1 configmaps and
// componentstatuses, a CRD group, apiextensions), ConfigMaps in several
// logical clusters listed through /clusters/* and patched with JSON patches
// in their own cluster. It can refuse wildcard LISTs and PATCHes, and run a
// concurrent writer before a PATCH.
package testapiserver

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Annotation is the key the fake's objects may carry.
const Annotation = "kcp.io/original-api-version"

// Object is one ConfigMap: its place and annotations.
type Object struct {
	Cluster, Namespace, Name string
	Annotations              map[string]string
	ResourceVersion          int
}

// Server is the fake. Set the fields before the first request, or under Lock.
type Server struct {
	*httptest.Server
	sync.Mutex
	// GitVersion is what /version says.
	GitVersion string
	// Token is the bearer token every request must carry (401 otherwise).
	Token string
	// ForbidWildcard answers LISTs through /clusters/* with 403.
	ForbidWildcard bool
	// PatchStatus, when set, answers every PATCH with this status code.
	PatchStatus int
	// BeforePatch runs (under the lock) before a PATCH of o is applied: a concurrent writer.
	BeforePatch func(o *Object)
	// Patches counts the PATCH requests.
	Patches int

	objects []*Object
}

// New starts the fake with objects on a TLS loopback listener.
func New(gitVersion string, objects ...*Object) *Server {
	s := &Server{GitVersion: gitVersion, Token: "fake-admin", objects: objects}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	// Clients that hang up at Close are not the test's business.
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	return s
}

// Object returns the stored object, or nil.
func (s *Server) Object(cluster, namespace, name string) *Object {
	s.Lock()
	defer s.Unlock()
	return s.find(cluster, namespace, name)
}

func (s *Server) find(cluster, namespace, name string) *Object {
	for _, o := range s.objects {
		if o.Cluster == cluster && o.Namespace == namespace && o.Name == name {
			return o
		}
	}
	return nil
}

// WriteKubeconfig writes a kubeconfig with context "shard" for the fake,
// trusting its certificate, and returns its path. The certificate is also
// written as dir/ca.crt, for --certificate-authority.
func (s *Server) WriteKubeconfig(dir string) (string, error) {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o600); err != nil {
		return "", err
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: shard
  context: {cluster: fake, user: admin}
current-context: shard
`, s.URL, base64.StdEncoding.EncodeToString(ca), s.Token)
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, []byte(kc), 0o600)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.Lock()
	defer s.Unlock()
	if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
		status(w, 401, "Unauthorized", "Unauthorized")
		return
	}
	path := r.URL.Path
	if path == "/version" {
		writeJSON(w, 200, map[string]string{"gitVersion": s.GitVersion})
		return
	}
	rest, ok := strings.CutPrefix(path, "/clusters/")
	if !ok {
		status(w, 404, "NotFound", "no such path "+path)
		return
	}
	cluster, rest, _ := strings.Cut(rest, "/")
	switch {
	case r.Method == "GET" && discovery[rest] != nil:
		writeJSON(w, 200, discovery[rest])
	case r.Method == "GET" && rest == "api/v1/configmaps":
		if cluster == "*" && s.ForbidWildcard {
			status(w, 403, "Forbidden", `configmaps is forbidden: User "fake-admin" cannot list resource "configmaps" in API group "" at the cluster scope`)
			return
		}
		s.list(w, cluster)
	case r.Method == "GET" && rest == "apis/apiextensions.k8s.io/v1/customresourcedefinitions":
		writeJSON(w, 200, map[string]any{"kind": "CustomResourceDefinitionList", "apiVersion": "apiextensions.k8s.io/v1", "metadata": map[string]any{},
			"items": []any{map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
				"metadata": map[string]any{"name": "widgets.example.kcp.io", "annotations": map[string]string{"kcp.io/cluster": "root"}},
				"spec":     map[string]any{"group": "example.kcp.io"}}}})
	case strings.HasPrefix(rest, "api/v1/namespaces/"):
		parts := strings.Split(strings.TrimPrefix(rest, "api/v1/namespaces/"), "/")
		if len(parts) != 3 || parts[1] != "configmaps" {
			status(w, 404, "NotFound", "no such path "+path)
			return
		}
		o := s.find(cluster, parts[0], parts[2])
		if o == nil {
			status(w, 404, "NotFound", fmt.Sprintf(`configmaps %q not found`, parts[2]))
			return
		}
		switch r.Method {
		case "GET":
			writeJSON(w, 200, o.json())
		case "PATCH":
			s.patch(w, r, o)
		default:
			status(w, 405, "MethodNotAllowed", r.Method)
		}
	default:
		status(w, 404, "NotFound", "no such path "+path)
	}
}

func (s *Server) list(w http.ResponseWriter, cluster string) {
	var items []any
	sorted := append([]*Object{}, s.objects...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Cluster+sorted[i].Name < sorted[j].Cluster+sorted[j].Name })
	for _, o := range sorted {
		if cluster == "*" || o.Cluster == cluster {
			items = append(items, o.json())
		}
	}
	writeJSON(w, 200, map[string]any{"kind": "ConfigMapList", "apiVersion": "v1", "metadata": map[string]any{"resourceVersion": "1"}, "items": items})
}

// patch applies a JSON patch of test and remove operations on annotations.
func (s *Server) patch(w http.ResponseWriter, r *http.Request, o *Object) {
	s.Patches++
	if s.PatchStatus != 0 {
		reason := map[int]string{405: "MethodNotAllowed", 409: "Conflict", 403: "Forbidden", 500: "InternalError"}[s.PatchStatus]
		status(w, s.PatchStatus, reason, "the fake refuses this PATCH")
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json-patch+json" {
		status(w, 415, "UnsupportedMediaType", "want a JSON patch, got "+ct)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var ops []struct {
		Op, Path string
		Value    *string
	}
	if err := json.Unmarshal(body, &ops); err != nil {
		status(w, 400, "BadRequest", err.Error())
		return
	}
	if s.BeforePatch != nil {
		s.BeforePatch(o)
	}
	const prefix = "/metadata/annotations/"
	next := map[string]string{}
	for k, v := range o.Annotations {
		next[k] = v
	}
	for _, op := range ops {
		key, ok := strings.CutPrefix(op.Path, prefix)
		if !ok {
			status(w, 422, "Invalid", "the fake patches annotations only")
			return
		}
		key = strings.ReplaceAll(strings.ReplaceAll(key, "~1", "/"), "~0", "~")
		switch op.Op {
		case "test":
			if v, ok := next[key]; !ok || op.Value == nil || v != *op.Value {
				status(w, 422, "", fmt.Sprintf("testing value %s failed: test failed", op.Path))
				return
			}
		case "remove":
			if _, ok := next[key]; !ok {
				status(w, 422, "", "remove of a missing key "+op.Path)
				return
			}
			delete(next, key)
		default:
			status(w, 422, "Invalid", "the fake does not do "+op.Op)
			return
		}
	}
	o.Annotations = next
	o.ResourceVersion++
	writeJSON(w, 200, o.json())
}

func (o *Object) json() map[string]any {
	ann := map[string]string{"kcp.io/cluster": o.Cluster}
	for k, v := range o.Annotations {
		ann[k] = v
	}
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
		"name": o.Name, "namespace": o.Namespace, "uid": o.Cluster + "-" + o.Namespace + "-" + o.Name,
		"resourceVersion": fmt.Sprint(o.ResourceVersion + 1), "annotations": ann}}
}

// discovery is what /clusters/<any>/<path> serves.
var discovery = map[string]any{
	"api": map[string]any{"kind": "APIVersions", "versions": []string{"v1"}},
	"api/v1": map[string]any{"kind": "APIResourceList", "groupVersion": "v1", "resources": []any{
		map[string]any{"name": "configmaps", "namespaced": true, "kind": "ConfigMap", "verbs": []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
		map[string]any{"name": "componentstatuses", "namespaced": false, "kind": "ComponentStatus", "verbs": []string{"get", "list"}},
	}},
	"apis": map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": []any{
		group("apiextensions.k8s.io"), group("example.kcp.io"),
	}},
	"apis/apiextensions.k8s.io/v1": map[string]any{"kind": "APIResourceList", "groupVersion": "apiextensions.k8s.io/v1", "resources": []any{
		map[string]any{"name": "customresourcedefinitions", "namespaced": false, "kind": "CustomResourceDefinition", "verbs": []string{"get", "list", "patch"}},
	}},
	"apis/example.kcp.io/v1": map[string]any{"kind": "APIResourceList", "groupVersion": "example.kcp.io/v1", "resources": []any{
		map[string]any{"name": "widgets", "namespaced": false, "kind": "Widget", "verbs": []string{"get", "list", "patch"}},
	}},
}

func group(name string) map[string]any {
	gv := map[string]string{"groupVersion": name + "/v1", "version": "v1"}
	return map[string]any{"name": name, "versions": []any{gv}, "preferredVersion": gv}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func status(w http.ResponseWriter, code int, reason, msg string) {
	writeJSON(w, code, map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "code": code, "reason": reason, "message": msg})
}
