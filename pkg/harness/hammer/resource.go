package hammer

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
)

// Resource is one API resource the hammer drives. Only resources the hammer
// knows how to seed (see Known) can be used for a load run.
type Resource struct {
	Group      string `json:"group"`
	Version    string `json:"version"`
	Resource   string `json:"resource"`
	Kind       string `json:"kind"`
	Namespaced bool   `json:"namespaced"`
	// CustomResource: the server holds the objects as unstructured ones, each
	// with an apiVersion of its own (a CRD-backed resource; on kcp, its own
	// APIs). Typed objects have none in the watch cache.
	CustomResource bool `json:"customResource,omitempty"`
}

var (
	// ClusterRoles is rbac.authorization.k8s.io/v1 clusterroles (cluster-scoped, typed).
	ClusterRoles = Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles", Kind: "ClusterRole"}
	// ConfigMaps is v1 configmaps (namespaced, typed).
	ConfigMaps = Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	// APIExports is kcp's apis.kcp.io/v1alpha2 apiexports (cluster-scoped, a
	// CRD-backed resource served as unstructured objects; only on kcp). For
	// these kcp's wildcard partial-metadata converter sets the annotation.
	APIExports = Resource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apiexports", Kind: "APIExport", CustomResource: true}
)

// Known lists the resources the hammer can seed, by resource name.
var Known = map[string]Resource{
	ClusterRoles.Resource: ClusterRoles,
	ConfigMaps.Resource:   ConfigMaps,
	APIExports.Resource:   APIExports,
}

// GroupVersion is the group/version the hammer serves the resource at:
// "rbac.authorization.k8s.io/v1" or "v1".
func (r Resource) GroupVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// originalAPIVersion is what kcp.io/original-api-version must be on a
// wildcard partial item of r: a custom resource's own apiVersion (the hammer
// seeds them at the version it serves); for a typed object, which has no
// apiVersion of its own in the cache, no key at all (never "").
func (r Resource) originalAPIVersion() checks.Expectation {
	if r.CustomResource {
		return checks.Expectation{Value: r.GroupVersion(), Present: true}
	}
	return checks.Expectation{}
}

// String is the group/version/resource spelling accepted by ParseResource.
func (r Resource) String() string {
	return r.GroupVersion() + "/" + r.Resource
}

// collectionPath is the path of the collection in one logical cluster
// ("*" for the wildcard), e.g. /clusters/*/apis/rbac.authorization.k8s.io/v1/clusterroles.
// namespace is used only for namespaced resources and may be empty (all namespaces).
func (r Resource) collectionPath(cluster, namespace string) string {
	var b strings.Builder
	b.WriteString("/clusters/")
	b.WriteString(cluster)
	if r.Group == "" {
		b.WriteString("/api/")
	} else {
		b.WriteString("/apis/")
		b.WriteString(r.Group)
		b.WriteString("/")
	}
	b.WriteString(r.Version)
	if r.Namespaced && namespace != "" {
		b.WriteString("/namespaces/")
		b.WriteString(url.PathEscape(namespace))
	}
	b.WriteString("/")
	b.WriteString(r.Resource)
	return b.String()
}

// objectPath is the path of one named object in one logical cluster.
func (r Resource) objectPath(cluster, namespace, name string) string {
	return r.collectionPath(cluster, namespace) + "/" + url.PathEscape(name)
}

// ParseResource accepts a known resource by name ("clusterroles"), or spelled
// with its group/version ("rbac.authorization.k8s.io/v1/clusterroles",
// "v1/configmaps").
func ParseResource(s string) (Resource, error) {
	s = strings.TrimSpace(s)
	name := s
	if i := strings.LastIndex(s, "/"); i >= 0 {
		name = s[i+1:]
	}
	r, ok := Known[name]
	if !ok {
		return Resource{}, fmt.Errorf("unknown resource %q: the hammer can seed only %s", s, strings.Join(knownNames(), ", "))
	}
	if name != s && s != r.String() {
		return Resource{}, fmt.Errorf("resource %q: the hammer serves %s as %s", s, name, r.String())
	}
	return r, nil
}

// ParseResources parses a comma-separated list with ParseResource.
func ParseResources(s string) ([]Resource, error) {
	var out []Resource
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		r, err := ParseResource(part)
		if err != nil {
			return nil, err
		}
		if seen[r.Resource] {
			continue
		}
		seen[r.Resource] = true
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no resource given (known: %s)", strings.Join(knownNames(), ", "))
	}
	return out, nil
}

func knownNames() []string {
	var names []string
	for n := range Known {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
