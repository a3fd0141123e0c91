package hammer

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
)

const (
	// OriginalAPIVersionAnnotation is what kcp's fork writes on wildcard partial items.
	OriginalAPIVersionAnnotation = checks.OriginalAPIVersionAnnotation
	// ClusterAnnotation names an object's logical cluster in kcp.
	ClusterAnnotation = "kcp.io/cluster"

	// OwnedLabel marks every object the hammer seeds.
	OwnedLabel = "hammer.kcp-carry.io/owned"
	// GenLabel is the label the writers change; its final value is check (c).
	GenLabel = "hammer.kcp-carry.io/gen"
	// NoteAnnotation is on every seeded object, so that its annotations map is
	// not nil: a nil map cannot be shared, so it cannot be polluted.
	NoteAnnotation = "hammer.kcp-carry.io/note"

	seedGen = "seed"
)

// seededObject is one object the hammer seeds and writes.
type seededObject struct {
	key checks.ObjectKey
	res Resource
}

func (o seededObject) path() string {
	return o.res.objectPath(o.key.Cluster, o.key.Namespace, o.key.Name)
}

// seededObjects returns every object of the run in a stable order.
func seededObjects(opts *Options) []seededObject {
	var out []seededObject
	for _, r := range opts.Resources {
		for _, c := range opts.Clusters {
			for i := 0; i < opts.Objects; i++ {
				k := checks.ObjectKey{Resource: r.Resource, Cluster: c, Name: fmt.Sprintf("%s%04d", opts.Prefix, i)}
				if r.Namespaced {
					k.Namespace = opts.Namespace
				}
				out = append(out, seededObject{key: k, res: r})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].key.String() < out[j].key.String() })
	return out
}

// seedBody is the JSON of a new seeded object.
func seedBody(o seededObject, extraAnnotations int) ([]byte, error) {
	annotations := map[string]string{NoteAnnotation: "seeded by the kcp-carry hammer; delete with hammer --cleanup-only"}
	for i := 0; i < extraAnnotations; i++ {
		annotations[fmt.Sprintf("hammer.kcp-carry.io/a%d", i)] = fmt.Sprintf("value-%d", i)
	}
	meta := map[string]any{
		"name":        o.key.Name,
		"labels":      map[string]string{OwnedLabel: "true", GenLabel: seedGen},
		"annotations": annotations,
	}
	if o.key.Namespace != "" {
		meta["namespace"] = o.key.Namespace
	}
	obj := map[string]any{
		"apiVersion": o.res.GroupVersion(),
		"kind":       o.res.Kind,
		"metadata":   meta,
	}
	switch o.res.Resource {
	case ClusterRoles.Resource:
		obj["rules"] = []map[string]any{{"apiGroups": []string{""}, "resources": []string{"configmaps"}, "verbs": []string{"get"}}}
	case ConfigMaps.Resource:
		obj["data"] = map[string]string{"hammer": "payload"}
	case APIExports.Resource:
		obj["spec"] = map[string]any{}
	default:
		return nil, fmt.Errorf("the hammer cannot seed %s", o.res)
	}
	return json.Marshal(obj)
}

// objectMeta is the part of an object (full or partial) the checks read.
type objectMeta struct {
	Name            string            `json:"name"`
	Namespace       string            `json:"namespace"`
	ResourceVersion string            `json:"resourceVersion"`
	Labels          map[string]string `json:"labels"`
	Annotations     map[string]string `json:"annotations"`
}

type metaItem struct {
	Kind       string     `json:"kind"`
	APIVersion string     `json:"apiVersion"`
	Metadata   objectMeta `json:"metadata"`
}

type metaList struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Metadata   struct {
		Continue        string `json:"continue"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Items []metaItem `json:"items"`
}

// clusterOf is the logical cluster of an item: its kcp.io/cluster annotation,
// or fallback (the cluster the request went to).
func clusterOf(m objectMeta, fallback string) string {
	if c := m.Annotations[ClusterAnnotation]; c != "" {
		return c
	}
	return fallback
}

// partialMeta is what the load reads of a partial item. Decoding only the
// two annotations kcp sets (no maps) keeps the hammer's CPU for the server.
type partialMeta struct {
	Name        string `json:"name"`
	Namespace   string `json:"namespace"`
	Annotations struct {
		OriginalAPIVersion *string `json:"kcp.io/original-api-version"`
		Cluster            string  `json:"kcp.io/cluster"`
	} `json:"annotations"`
}

type partialItem struct {
	Kind       string      `json:"kind"`
	APIVersion string      `json:"apiVersion"`
	Metadata   partialMeta `json:"metadata"`
}

type partialList struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Metadata   struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items []partialItem `json:"items"`
}

// itemOf converts the annotations of an unstructured item (kcp's metadata
// client) to a partialMeta.
func itemOf(name, namespace string, annotations map[string]string) partialMeta {
	m := partialMeta{Name: name, Namespace: namespace}
	if v, ok := annotations[OriginalAPIVersionAnnotation]; ok {
		m.Annotations.OriginalAPIVersion = &v
	}
	m.Annotations.Cluster = annotations[ClusterAnnotation]
	return m
}
