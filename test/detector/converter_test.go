package detector

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/storage"

	cm "github.com/kcp-carry/kcp-carry/pkg/harness/cachemutation"
)

// unstructuredCache hands out custom resources the way the cacher does: the
// list's items are struct copies of the cached objects, whose Object maps
// (and everything in them) are the cache's.
type unstructuredCache struct {
	storage.Interface // unused methods panic
	cached            []*unstructured.Unstructured
}

func (c *unstructuredCache) GetList(_ context.Context, _ string, _ storage.ListOptions, listObj runtime.Object) error {
	l := listObj.(*unstructured.UnstructuredList)
	l.Items = make([]unstructured.Unstructured, len(c.cached))
	for i, o := range c.cached {
		l.Items[i] = *o
	}
	return nil
}

func widget(name, version string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.io/" + version)
	u.SetKind("Widget")
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	u.SetResourceVersion("7")
	u.SetAnnotations(map[string]string{"kcp.io/cluster": "root"})
	u.Object["spec"] = map[string]any{"size": int64(1)}
	return u
}

// TestConverterAudit runs apiextensions' kcpWildcardPartialMetadataConverter
// — which the test shard cannot serve, it has no apiextensions — behind the
// fork's delegating converter on a list handed out by a cache, and asks the
// detector what reaches the cache. The read paths (the CR storage codec and
// the response encoders) use the safe converter, which deep-copies its input
// first: nothing reaches the cache. The unsafe converter (handed to
// RequestScope.UnsafeConvertor; the fork uses it only in the patch handler,
// on objects GuaranteedUpdate already copied) writes the converted
// annotations into the input's own metadata map: restoreObjectMeta puts the
// original metadata map into the result and sets its "annotations" there.
func TestConverterAudit(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.UID = "widgets.example.io.wildcard.partial-metadata"
	crd.Spec.Group = "example.io"
	crd.Spec.Scope = apiextensionsv1.ClusterScoped
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}}
	safe, unsafe, err := conversion.NewDelegatingConverter(crd, conversion.NewKCPWildcardPartialMetadataConverter())
	if err != nil {
		t.Fatal(err)
	}
	target := schema.GroupVersion{Group: "example.io", Version: "v2"}

	for _, tc := range []struct {
		name      string
		convertor runtime.ObjectConvertor
		wantPaths []string // nil: no finding
	}{
		{"safe (read paths)", safe, nil},
		{"unsafe (patch handler)", unsafe, []string{`metadata.annotations["kcp.io/original-api-version"]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []cm.Finding
			d := cm.New(cm.Options{Interval: -1, OnFinding: func(f cm.Finding) { got = append(got, f) }})
			defer d.Stop()
			c := &unstructuredCache{cached: []*unstructured.Unstructured{widget("a", "v1"), widget("b", "v1")}}
			s := d.Wrap(c, schema.GroupResource{Group: "example.io", Resource: "widgets"})

			ctx, done := context.WithCancel(context.Background())
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("example.io/v1")
			list.SetKind("WidgetList")
			if err := s.GetList(ctx, "/widgets", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list); err != nil {
				t.Fatal(err)
			}
			if d.Tracked() != 2 {
				t.Fatalf("tracked %d objects, want 2", d.Tracked())
			}
			out, err := tc.convertor.ConvertToVersion(list, target)
			if err != nil {
				t.Fatal(err)
			}
			// The converter did its job on what it returns.
			first := out.(*unstructured.UnstructuredList).Items[0]
			if first.GetAPIVersion() != "example.io/v2" || first.GetAnnotations()["kcp.io/original-api-version"] != "example.io/v1" {
				t.Fatalf("converted item: apiVersion %q, annotations %v", first.GetAPIVersion(), first.GetAnnotations())
			}
			done()
			d.Stop()

			if tc.wantPaths == nil {
				if len(got) != 0 {
					t.Fatalf("findings: %v", got)
				}
				return
			}
			if len(got) != 2 {
				t.Fatalf("%d findings, want one per listed object: %v", len(got), got)
			}
			for _, f := range got {
				if diff := cmp.Diff(tc.wantPaths, f.Paths); diff != "" {
					t.Errorf("%s: paths (-want +got):\n%s\n%s", f.Name, diff, f.Diff)
				}
			}
			if v := c.cached[0].GetAnnotations()["kcp.io/original-api-version"]; v != "example.io/v1" {
				t.Errorf("the cached object's annotation is %q: the finding did not reach the cache?", v)
			}
			t.Logf("unsafe converter: %s\n%s", got[0], got[0].Diff)
		})
	}
}
