package scrub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Resource is one API resource at the version the server prefers.
type Resource struct {
	Group      string `json:"group"`
	Version    string `json:"version"`
	Resource   string `json:"resource"`
	Namespaced bool   `json:"namespaced"`
}

// GVR is the resource as client-go names it.
func (r Resource) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
}

// String is kubectl's spelling: configmaps, clusterroles.rbac.authorization.k8s.io.
func (r Resource) String() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

func (r Resource) collectionPath() string {
	if r.Group == "" {
		return "api/" + r.Version + "/" + r.Resource
	}
	return "apis/" + r.Group + "/" + r.Version + "/" + r.Resource
}

// Exclusion is a discovered resource the scan leaves out, and why.
type Exclusion struct {
	Resource string `json:"resource"`
	Reason   string `json:"reason"`
}

// Where kcp serves resources that are not built in: CustomResourceDefinitions
// (kcp's own APIs are CRDs in system logical clusters), and APIBindings, whose
// bound resources are served from CRDs kcp keeps for them. Both serve
// unstructured objects, whose annotations the pristine fork never writes.
var (
	crdsResource        = Resource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	apiBindingsResource = Resource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apibindings"}
)

// discover returns the built-in resources to scan: discovered at the
// preferred version, supporting list and patch, and in no group a CRD or an
// APIBinding serves; the rest goes to the report's Excluded.
func (s *scrubber) discover(ctx context.Context) ([]Resource, error) {
	where := s.opts.DiscoveryCluster
	if len(s.opts.Workspaces) > 0 {
		where = s.opts.Workspaces[0]
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(s.clusterConfig(where), s.http)
	if err != nil {
		return nil, err
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discovery in logical cluster %s (--discovery-cluster): %w", where, err)
	}
	if err != nil {
		// Some aggregated group did not answer; the built-in ones did.
		s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("discovery in %s was partial: %v", where, err))
	}
	var all []Resource
	served := map[string]bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, ar := range l.APIResources {
			if strings.Contains(ar.Name, "/") {
				continue // subresource
			}
			r := Resource{Group: gv.Group, Version: gv.Version, Resource: ar.Name, Namespaced: ar.Namespaced}
			served[r.Group+"/"+r.Resource] = true
			if !slices.Contains(ar.Verbs, "list") || !slices.Contains(ar.Verbs, "patch") {
				s.exclude(r, fmt.Sprintf("does not support %s", missingVerbs(ar.Verbs)))
				continue
			}
			all = append(all, r)
		}
	}
	crdGroups, err := s.nonBuiltinGroups(ctx, served)
	if err != nil {
		return nil, err
	}
	var out []Resource
	for _, r := range all {
		if why, ok := crdGroups[r.Group]; ok {
			s.exclude(r, why)
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	if len(s.opts.Resources) > 0 {
		return s.selectResources(out)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("discovery in logical cluster %s found no built-in resource that supports list and patch", where)
	}
	return out, nil
}

func missingVerbs(verbs []string) string {
	var miss []string
	for _, v := range []string{"list", "patch"} {
		if !slices.Contains(verbs, v) {
			miss = append(miss, v)
		}
	}
	return strings.Join(miss, " and ")
}

func (s *scrubber) exclude(r Resource, why string) {
	s.rep.Excluded = append(s.rep.Excluded, Exclusion{Resource: r.String(), Reason: why})
}

// nonBuiltinGroups maps each API group a CRD or an APIBinding serves, in any
// logical cluster of the scope, to the reason.
func (s *scrubber) nonBuiltinGroups(ctx context.Context, served map[string]bool) (map[string]string, error) {
	groups := map[string]string{}
	if served[crdsResource.Group+"/"+crdsResource.Resource] {
		err := s.eachObject(ctx, crdsResource, func(_ string, u *unstructured.Unstructured) error {
			if g, _, _ := unstructured.NestedString(u.Object, "spec", "group"); g != "" {
				groups[g] = "served by a CustomResourceDefinition (" + u.GetName() + ")"
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("finding the groups CRDs serve: %w", err)
		}
	}
	if served[apiBindingsResource.Group+"/"+apiBindingsResource.Resource] {
		err := s.eachObject(ctx, apiBindingsResource, func(_ string, u *unstructured.Unstructured) error {
			bound, _, _ := unstructured.NestedSlice(u.Object, "status", "boundResources")
			for _, b := range bound {
				if m, ok := b.(map[string]any); ok {
					if g, _ := m["group"].(string); g != "" {
						if _, seen := groups[g]; !seen {
							groups[g] = "bound through an APIBinding (" + u.GetName() + ")"
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("finding the groups APIBindings serve: %w", err)
		}
	}
	return groups, nil
}

// selectResources keeps the resources --resources names, and refuses a name
// that is not among them, saying why.
func (s *scrubber) selectResources(candidates []Resource) ([]Resource, error) {
	var out []Resource
	for _, name := range s.opts.Resources {
		i := slices.IndexFunc(candidates, func(r Resource) bool { return r.String() == name || r.Resource == name })
		if i >= 0 {
			if !slices.Contains(out, candidates[i]) {
				out = append(out, candidates[i])
			}
			continue
		}
		j := slices.IndexFunc(s.rep.Excluded, func(e Exclusion) bool {
			return e.Resource == name || strings.SplitN(e.Resource, ".", 2)[0] == name
		})
		if j >= 0 {
			return nil, fmt.Errorf("--resources: %s %s: it cannot be scrubbed", s.rep.Excluded[j].Resource, s.rep.Excluded[j].Reason)
		}
		return nil, fmt.Errorf("--resources: the server does not serve %q (spell it as kubectl does: configmaps, clusterroles.rbac.authorization.k8s.io)", name)
	}
	return out, nil
}

// decodeVersion reads gitVersion from a /version answer.
func decodeVersion(body []byte) (string, error) {
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return "", fmt.Errorf("not a version answer: %w", err)
	}
	if v.GitVersion == "" {
		return "", errors.New("no gitVersion in the answer")
	}
	return v.GitVersion, nil
}
