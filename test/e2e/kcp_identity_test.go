package e2e

import (
	"bufio"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcppatches"
	"github.com/kcp-carry/kcp-carry/pkg/carry/overlay"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/harness/partialmeta"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server/servertest"
)

// The resource both providers export: the same group and resource name, from
// APIExports of their own, so with different identities.
const (
	identityGroup    = "identity.kcp-carry.io"
	identityVersion  = "v1"
	identityResource = "widgets"
	identitySchema   = identityVersion + "." + identityResource + "." + identityGroup
)

// identityWorkspaces each export widgets and bind their own export.
var identityWorkspaces = []string{"identity-a", "identity-b"}

var (
	apiResourceSchemasGVR = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apiresourceschemas"}
	apiExportsGVR         = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apiexports"}
	apiBindingsGVR        = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apibindings"}
	widgetsGVR            = schema.GroupVersionResource{Group: identityGroup, Version: identityVersion, Resource: identityResource}
)

// identityProvider is one workspace that exports widgets and binds its own
// export: its logical cluster, the export's identity hash, and the widgets
// it holds (named <tag>-..., so that a name says which identity it is of).
type identityProvider struct {
	tag      string
	cluster  string
	identity string
	objects  []string
}

// seenObject is one item of a LIST, or the object of one watch event.
type seenObject struct {
	Name    string
	Cluster string
}

func (o seenObject) String() string { return o.Cluster + "|" + o.Name }

// crossTalk compares what a request through one identity returned with
// what that identity holds: foreign are the objects it returned that are
// not its own (by name and logical cluster), missing the ones of its own it
// did not return. The name of every object says its identity, so an object of
// the other identity is foreign wherever kcp says it lives.
func crossTalk(own identityProvider, got []seenObject) (foreign, missing []string) {
	mine := map[string]bool{}
	for _, n := range own.objects {
		mine[n] = true
	}
	returned := map[string]bool{}
	for _, o := range got {
		if !mine[o.Name] || o.Cluster != own.cluster {
			foreign = append(foreign, o.String())
			continue
		}
		returned[o.Name] = true
	}
	for _, n := range own.objects {
		if !returned[n] {
			missing = append(missing, own.cluster+"|"+n)
		}
	}
	sort.Strings(foreign)
	return foreign, missing
}

// identityFixPR is the kcp pull request (kcp-patches/<n>-<this>) that
// serves a wildcard partial-metadata request through an identity from that
// identity's objects alone.
const identityFixPR = "identity-partial-metadata"

// TestRealKCPIdentityWildcardPartialMetadata: two APIExports export the
// same resource (identity.kcp-carry.io widgets) with different identities,
// each bound in its own workspace with widgets of its own, and root has a
// plain CRD of the same name with one widget. Through each identity's URL
// (/clusters/*/apis/identity.kcp-carry.io/v1/widgets:<hash>) it sends the
// shard admin's wildcard partial-metadata LISTs (resourceVersion "" and
// "0") and a WATCH, then creates a widget of b, one of a and one more of b,
// and judges what each request returned against what its identity holds
// (crossTalk):
//
//   - full-object LISTs through each identity: that identity's widgets only,
//     always;
//   - the control, the same partial-metadata LIST and WATCH without an
//     identity: every widget of both identities and the plain CRD, which
//     kcp serves from one storage by design; the check must call the others
//     foreign there, or it could not see cross-talk;
//   - partial-metadata LISTs and WATCHes through an identity: on a kcp tree
//     (KCP_SOURCE, the tree bin/kcp was built from) without
//     kcp-patches/<n>-identity-partial-metadata, every widget of the
//     resource name, the other identity's and the plain CRD's too, and the
//     watch sends the other identity's events: kcp gives every wildcard
//     partial-metadata request, through an identity or not, the one storage
//     keyed <name>.wildcard.partial-metadata (docs/identity.md). The test
//     asserts that leak, so that it notices when kcp changes; with the fix in
//     the tree it asserts the identity's widgets only;
//   - the storage's lifetime: a CRD of another resource created and deleted
//     in root. Without the fix the WATCH through a's identity lives on (the
//     wildcard storage is kept while a CRD of widgets exists). With it, the
//     identity's storage is the fork's to keep: a kcp linking the fork pull
//     request identity-storage (staging-patches/pull-requests) keeps it while
//     its bound CRD exists at the resourceVersion its UID names, so the WATCH
//     stays open 10 s and sends a's next widget; a kcp without it tears it
//     down on any CRD deletion and the WATCH ends (the positive control,
//     TestRealKCPSeries' identity-without-fork-patch). Then, with the fix,
//     a's bound CRD changes (a served version v2): a LIST at v2 through a's
//     identity answers a's widgets, the next unrelated CRD deletion ends a
//     WATCH opened on the storage built before the change (nothing stale
//     is kept), and a WATCH at v2 opened after it sends a's next widget.
func TestRealKCPIdentityWildcardPartialMetadata(t *testing.T) {
	bin := kcpBinary(t, "patched")
	fixed := identityFixCarried(t)
	kept := identityStorageLinked(t, bin)
	s, clusters := startKCPWithWorkspacesNamed(t, bin, identityWorkspaces)
	began := time.Now()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	providers := make([]identityProvider, len(clusters))
	for i, cluster := range clusters {
		tag := strings.TrimPrefix(identityWorkspaces[i], "identity-")
		providers[i] = setUpIdentityProvider(ctx, t, s, tag, cluster)
	}
	a, b := &providers[0], &providers[1]
	if a.identity == b.identity {
		t.Fatalf("both APIExports have identity %s: the test needs two", a.identity)
	}
	t.Logf("identities: %s in %s, %s in %s", a.identity, a.cluster, b.identity, b.cluster)
	plain := setUpPlainCRD(ctx, t, s, "root")
	wc := newWildcardClient(t, s)

	// judge asserts the verdict on what a request through p's identity
	// returned: foreign objects only on a kcp without the fix, and then some.
	judge := func(what string, p identityProvider, foreign []string) {
		t.Helper()
		switch {
		case fixed && len(foreign) > 0:
			t.Errorf("%s through %s's identity returned %v, objects of other identities, on a kcp tree that carries kcp-patches/*-%s", what, p.tag, foreign, identityFixPR)
		case !fixed && len(foreign) == 0:
			t.Errorf("%s through %s's identity returned its own objects only, on a kcp tree without kcp-patches/*-%s: kcp no longer leaks; update docs/identity.md and this test", what, p.tag, identityFixPR)
		case !fixed:
			t.Logf("kcp's leak (docs/identity.md): %s through %s's identity returned %v", what, p.tag, foreign)
		}
	}

	// The LISTs: partial metadata from etcd ("") and the watch cache ("0"),
	// and full objects from etcd.
	for _, p := range providers {
		for _, rv := range []string{"", "0"} {
			got, _ := wc.list(ctx, t, p.identity, rv, true)
			foreign, missing := crossTalk(p, got)
			if len(missing) > 0 {
				t.Errorf("partial LIST rv=%q through %s's identity did not return %v", rv, p.tag, missing)
			}
			judge(fmt.Sprintf("partial LIST rv=%q", rv), p, foreign)
		}
		got, _ := wc.list(ctx, t, p.identity, "", false)
		if foreign, missing := crossTalk(p, got); len(foreign)+len(missing) > 0 {
			t.Errorf("full LIST through %s's identity: foreign %v, missing %v; want its own objects only", p.tag, foreign, missing)
		}
	}
	merged, _ := wc.list(ctx, t, "", "0", true)
	everyone := append(slices.Clone(providers), plain)
	for _, p := range everyone {
		foreign, missing := crossTalk(p, merged)
		if len(missing) > 0 || len(foreign) != len(merged)-len(p.objects) {
			t.Errorf("control: partial LIST without identity, judged for %s: foreign %v, missing %v; want every other widget foreign", p.tag, foreign, missing)
		}
	}
	t.Logf("control: the partial LIST without identity returned %d widgets, of both identities and the plain CRD, each foreign to the others", len(merged))

	// The WATCHes, each from its own LIST's resourceVersion; then one new
	// widget of b, one of a, one more of b. Were a's watch served from a
	// storage that holds b's widgets, b's first would reach it before a's own
	// (one watch cache sends events in resourceVersion order), and a's would
	// reach b's watch before b's second.
	wa := wc.watch(ctx, t, a.identity)
	wb := wc.watch(ctx, t, b.identity)
	wx := wc.watch(ctx, t, "")
	b.objects = append(b.objects, createWidget(ctx, t, s, b, "b-live-0"))
	a.objects = append(a.objects, createWidget(ctx, t, s, a, "a-live"))
	b.objects = append(b.objects, createWidget(ctx, t, s, b, "b-live-1"))
	gotA, gotB, gotX := wa.until(t, "a-live"), wb.until(t, "b-live-1"), wx.until(t, "a-live", "b-live-1")
	fa, _ := crossTalk(*a, gotA)
	fb, _ := crossTalk(*b, gotB)
	judge("partial WATCH", *a, fa)
	judge("partial WATCH", *b, fb)
	if fx, _ := crossTalk(*a, gotX); len(fx) == 0 {
		t.Errorf("control: the partial WATCH without identity sent %v, nothing of b: the check could not see cross-talk", gotX)
	}
	t.Logf("watch events: through a's identity %v, through b's %v, without identity %v", gotA, gotB, gotX)

	// The storage's lifetime. The fork's CRD handler, on every CRD deletion on
	// the shard (removeDeadStorage), keeps the storage of a real CRD's UID and
	// the <name>.wildcard.partial-metadata one while a CRD of that resource
	// exists; the identity's storage of
	// kcp-patches/<n>-identity-partial-metadata only with the fork pull
	// request identity-storage, while its bound CRD is unchanged. A CRD of
	// another resource, created and deleted in root: the watch through a's
	// identity lives on without kcp's fix (served from the wildcard storage)
	// and with both fixes; with kcp's alone, it ends. Asserted either way, so
	// that the test notices when kcp or the fork changes (docs/identity.md).
	la := wc.watch(ctx, t, a.identity)
	lx := wc.watch(ctx, t, "")
	createAndDeleteCRD(ctx, t, s, "root", "gadgets.lifetime.kcp-carry.io")
	deleted := time.Now()
	within := 15 * time.Second
	if !fixed || kept {
		within = 10 * time.Second // it must stay open that long
	}
	ended := la.endsWithin(within)
	a.objects = append(a.objects, createWidget(ctx, t, s, a, "a-after-delete"))
	lx.until(t, "a-after-delete") // the control: the storage of every widget lives on
	switch {
	case fixed && !kept && ended == nil:
		t.Errorf("the wildcard partial-metadata WATCH through a's identity outlived an unrelated CRD deletion on a kcp without the fork's pull request %s (kcp tree with kcp-patches/*-%s): the fork keeps its storage now; update docs/identity.md and this test", identityStoragePR, identityFixPR)
	case fixed && !kept:
		t.Logf("without the fork's pull request %s the identity's storage is torn down on an unrelated CRD deletion (removeDeadStorage): the WATCH through a's identity ended %s after it (%v)", identityStoragePR, time.Since(deleted).Round(time.Millisecond), ended)
	case ended != nil:
		t.Errorf("the wildcard partial-metadata WATCH through a's identity ended after an unrelated CRD deletion (kcp-patches/*-%s in the tree: %t, the fork's pull request %s linked: %t): %v", identityFixPR, fixed, identityStoragePR, kept, ended)
	default:
		la.until(t, "a-after-delete")
		if fixed {
			t.Logf("the identity's storage outlived an unrelated CRD deletion (the fork's pull request %s): the WATCH through a's identity stayed open %s and sent a-after-delete", identityStoragePR, within)
		} else {
			t.Logf("the WATCH through a's identity outlived an unrelated CRD deletion (served from the wildcard storage) and sent a-after-delete")
		}
	}
	if fixed {
		boundCRDChanges(ctx, t, s, wc, a)
	}
	t.Logf("the test's requests took %s after kcp and its workspaces were ready", time.Since(began).Round(time.Millisecond))
	expectCleanOutput(t, s.Server)
}

// identityFixCarried says whether the kcp tree bin/kcp was built from
// (KCP_SOURCE) carries kcp-patches/<n>-identity-partial-metadata; the test
// skips without KCP_SOURCE, which decides its verdict.
func identityFixCarried(t *testing.T) bool {
	t.Helper()
	src := os.Getenv(EnvKCPSource)
	if src == "" {
		t.Skipf("the verdict depends on the kcp tree bin/kcp was built from: set %s", EnvKCPSource)
	}
	prs, err := kcppatches.Load(testfs.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range prs {
		if strings.HasSuffix(pr.Name, "-"+identityFixPR) {
			form, err := pr.CarriedForm(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s carries kcp-patches/%s: %t", src, pr.Name, form != nil)
			return form != nil
		}
	}
	t.Fatalf("no kcp-patches/<n>-%s", identityFixPR)
	return false
}

// identityStoragePR is the fork's pull request (staging-patches/pull-requests)
// that keeps the storage of a wildcard partial-metadata request through an
// identity while its bound CRD is unchanged.
const identityStoragePR = "identity-storage"

// identityStoragePatches are the patches of the fork's pull request
// identityStoragePR: its module, and the patch that starts it and the
// module's patches after it, as `carry build --without` names them
// (<module>/<patch file>).
func identityStoragePatches(t *testing.T, root string) (mod string, patches []string) {
	t.Helper()
	file := filepath.Join(root, "staging-patches", "pull-requests")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := series.Lines(data)
	if err != nil {
		t.Fatal(err)
	}
	var first string
	for _, l := range lines {
		if len(l.Fields) == 2 && l.Fields[0] == identityStoragePR {
			mod, first = path.Dir(l.Fields[1]), path.Base(l.Fields[1])
		}
	}
	if first == "" {
		t.Fatalf("%s: no pull request %s", file, identityStoragePR)
	}
	c, err := carryset.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Modules {
		if m.Module != mod {
			continue
		}
		names := m.Series.Names()
		i := slices.Index(names, first)
		if i < 0 {
			t.Fatalf("%s: %s/%s is not in the series", file, mod, first)
		}
		for _, n := range names[i:] {
			patches = append(patches, mod+"/"+n)
		}
		return mod, patches
	}
	t.Fatalf("%s: %s is not carried", file, mod)
	return "", nil
}

// identityStorageLinked says whether the kcp binary bin links every patch of
// identityStoragePR: its build info names the overlay directory it linked
// the module from, and that overlay's stamp the patches applied there.
func identityStorageLinked(t *testing.T, bin string) bool {
	t.Helper()
	mod, patches := identityStoragePatches(t, testfs.RepoRoot(t))
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var dir string
	for _, d := range info.Deps {
		if d.Path == mod && d.Replace != nil && modfile.IsDirectoryPath(d.Replace.Path) {
			dir = d.Replace.Path
		}
	}
	if dir == "" {
		t.Logf("%s links %s from no overlay: without the fork's pull request %s", bin, mod, identityStoragePR)
		return false
	}
	overlayDir := strings.TrimSuffix(filepath.Clean(dir), string(filepath.Separator)+filepath.FromSlash(mod))
	st, err := overlay.ReadStamp(overlayDir, mod)
	if err != nil {
		t.Fatalf("%s links %s from %s: %v", bin, mod, dir, err)
	}
	for _, p := range patches {
		if !slices.Contains(st.Patches, path.Base(p)) {
			t.Logf("%s links %s from %s, whose patches %v leave out %s: without the fork's pull request %s", bin, mod, dir, st.Patches, p, identityStoragePR)
			return false
		}
	}
	t.Logf("%s links %s from %s with the fork's pull request %s (%v)", bin, mod, dir, identityStoragePR, patches)
	return true
}

// boundCRDChanges adds a served version v2 to the CRD bound for p's
// identity (in system:bound-crds, as the shard admin), with a WATCH through
// p's identity open on the storage built before the change. A LIST at v2
// through the identity must answer p's widgets (a storage built from the CRD
// as it is now); the next unrelated CRD deletion must end the old WATCH (the
// storage of a CRD's older resourceVersion is not kept); a WATCH at v2
// opened after it must send p's next widget.
func boundCRDChanges(ctx context.Context, t *testing.T, s *server.KCP, wc *wildcardClient, p *identityProvider) {
	t.Helper()
	old := wc.watch(ctx, t, p.identity)
	binding, err := dynamicFor(t, s, p.cluster).Resource(apiBindingsGVR).Get(ctx, identityResource, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound, _, _ := unstructured.NestedSlice(binding.Object, "status", "boundResources")
	if len(bound) != 1 {
		t.Fatalf("APIBinding %s|%s has bound resources %v, want one", p.cluster, identityResource, bound)
	}
	name, _, _ := unstructured.NestedString(bound[0].(map[string]any), "schema", "UID")
	if name == "" {
		t.Fatalf("APIBinding %s|%s: no schema UID in its bound resource %v", p.cluster, identityResource, bound[0])
	}
	crds := dynamicFor(t, s, boundCRDsCluster).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	poll(ctx, t, "version v2 added to the CRD "+boundCRDsCluster+"|"+name, func(ctx context.Context) (bool, error) {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		if len(versions) == 0 {
			return false, fmt.Errorf("the CRD %s|%s has no versions", boundCRDsCluster, name)
		}
		v2 := runtime.DeepCopyJSON(versions[0].(map[string]any))
		v2["name"], v2["storage"] = "v2", false
		if err := unstructured.SetNestedSlice(crd.Object, append(versions, v2), "spec", "versions"); err != nil {
			return false, err
		}
		_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
		return err == nil, nil
	})
	changed := time.Now()
	v2 := wc.at("v2")
	var got []seenObject
	var last error
	poll(ctx, t, "a partial LIST at v2 through "+p.tag+"'s identity", func(ctx context.Context) (bool, error) {
		got, last = v2.tryList(ctx, p.identity)
		return last == nil, nil
	})
	if foreign, missing := crossTalk(*p, got); len(foreign)+len(missing) > 0 {
		t.Errorf("partial LIST at v2 through %s's identity after its bound CRD changed: foreign %v, missing %v", p.tag, foreign, missing)
	}
	t.Logf("a partial LIST at v2 through %s's identity answered its %d widgets %s after v2 was added to its bound CRD", p.tag, len(got), time.Since(changed).Round(time.Millisecond))
	createAndDeleteCRD(ctx, t, s, "root", "gizmos.lifetime.kcp-carry.io")
	if err := old.endsWithin(15 * time.Second); err == nil {
		t.Errorf("the WATCH through %s's identity on the storage built before its bound CRD changed outlived the next CRD deletion by 15 s: that storage is kept", p.tag)
	} else {
		t.Logf("the WATCH on the storage built before the bound CRD changed ended at the next CRD deletion (%v)", err)
	}
	w := v2.watch(ctx, t, p.identity)
	p.objects = append(p.objects, createWidget(ctx, t, s, p, p.tag+"-after-change"))
	w.until(t, p.tag+"-after-change")
	t.Logf("a WATCH at v2 through %s's identity, opened after that deletion, sent %s-after-change", p.tag, p.tag)
}

// boundCRDsCluster is the logical cluster of the CRDs kcp binds.
const boundCRDsCluster = "system:bound-crds"

// startKCPWithWorkspacesNamed runs kcp on a temporary root directory with
// the workspaces root:<name> and returns it with their logical clusters.
func startKCPWithWorkspacesNamed(t *testing.T, bin string, names []string) (*server.KCP, []string) {
	t.Helper()
	return servertest.StartKCPWithWorkspaces(t, server.KCPOptions{Binary: bin, RootDir: t.TempDir(), Env: kcpEnv(t, bin)}, names)
}

// widgetsSchema is the widgets' OpenAPI schema: an object whose spec takes
// any fields.
var widgetsSchema = map[string]any{"type": "object", "properties": map[string]any{
	"spec": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
}}

// widgetsSpec is the spec of an APIResourceSchema or a CRD of widgets, with
// schema as its version's schema field.
func widgetsSpec(schema map[string]any) map[string]any {
	return map[string]any{
		"group": identityGroup,
		"names": map[string]any{"plural": identityResource, "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
		"scope": "Cluster",
		"versions": []any{map[string]any{
			"name": identityVersion, "served": true, "storage": true, "schema": schema,
		}},
	}
}

// mustCreate creates obj as gvr in cluster, or finds it there.
func mustCreate(ctx context.Context, t *testing.T, s *server.KCP, cluster string, gvr schema.GroupVersionResource, obj map[string]any) {
	t.Helper()
	if _, err := dynamicFor(t, s, cluster).Resource(gvr).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating %s %v in %s: %v", gvr.Resource, obj["metadata"], cluster, err)
	}
}

// setUpIdentityProvider creates, in cluster, the APIResourceSchema of
// widgets, an APIExport of it, an APIBinding of that export, and two
// widgets, <tag>-0 and <tag>-1.
func setUpIdentityProvider(ctx context.Context, t *testing.T, s *server.KCP, tag, cluster string) identityProvider {
	t.Helper()
	dc := dynamicFor(t, s, cluster)
	mustCreate(ctx, t, s, cluster, apiResourceSchemasGVR, map[string]any{
		"apiVersion": "apis.kcp.io/v1alpha1",
		"kind":       "APIResourceSchema",
		"metadata":   map[string]any{"name": identitySchema},
		"spec":       widgetsSpec(widgetsSchema),
	})
	mustCreate(ctx, t, s, cluster, apiExportsGVR, map[string]any{
		"apiVersion": "apis.kcp.io/v1alpha2",
		"kind":       "APIExport",
		"metadata":   map[string]any{"name": identityResource},
		"spec": map[string]any{"resources": []any{map[string]any{
			"group": identityGroup, "name": identityResource, "schema": identitySchema,
			"storage": map[string]any{"crd": map[string]any{}},
		}}},
	})
	var identity string
	poll(ctx, t, "the identity hash of APIExport widgets in "+cluster, func(ctx context.Context) (bool, error) {
		e, err := dc.Resource(apiExportsGVR).Get(ctx, identityResource, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		identity, _, _ = unstructured.NestedString(e.Object, "status", "identityHash")
		return identity != "", nil
	})
	mustCreate(ctx, t, s, cluster, apiBindingsGVR, map[string]any{
		"apiVersion": "apis.kcp.io/v1alpha2",
		"kind":       "APIBinding",
		"metadata":   map[string]any{"name": identityResource},
		"spec":       map[string]any{"reference": map[string]any{"export": map[string]any{"name": identityResource}}},
	})
	poll(ctx, t, "APIBinding widgets in "+cluster+" Bound", func(ctx context.Context) (bool, error) {
		b, err := dc.Resource(apiBindingsGVR).Get(ctx, identityResource, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase, _, _ := unstructured.NestedString(b.Object, "status", "phase")
		return phase == "Bound", nil
	})
	p := identityProvider{tag: tag, cluster: cluster, identity: identity}
	for i := range 2 {
		p.objects = append(p.objects, createWidget(ctx, t, s, &p, fmt.Sprintf("%s-%d", tag, i)))
	}
	return p
}

// setUpPlainCRD creates, in cluster, a CRD of widgets of its own (no
// APIExport, no identity) and one widget, plain-0.
func setUpPlainCRD(ctx context.Context, t *testing.T, s *server.KCP, cluster string) identityProvider {
	t.Helper()
	mustCreate(ctx, t, s, cluster, schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": identityResource + "." + identityGroup},
		"spec":       widgetsSpec(map[string]any{"openAPIV3Schema": widgetsSchema}),
	})
	p := identityProvider{tag: "plain", cluster: cluster}
	p.objects = append(p.objects, createWidget(ctx, t, s, &p, "plain-0"))
	return p
}

// createAndDeleteCRD creates the CRD name (<plural>.<group>, one version
// v1) in cluster, then deletes it and waits until it is gone.
func createAndDeleteCRD(ctx context.Context, t *testing.T, s *server.KCP, cluster, name string) {
	t.Helper()
	plural, group, _ := strings.Cut(name, ".")
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	mustCreate(ctx, t, s, cluster, crds, map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"group": group,
			"names": map[string]any{"plural": plural, "singular": strings.TrimSuffix(plural, "s"), "kind": "Gadget", "listKind": "GadgetList"},
			"scope": "Cluster",
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true, "schema": map[string]any{"openAPIV3Schema": widgetsSchema},
			}},
		},
	})
	dc := dynamicFor(t, s, cluster).Resource(crds)
	if err := dc.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting CRD %s in %s: %v", name, cluster, err)
	}
	poll(ctx, t, "CRD "+name+" in "+cluster+" gone", func(ctx context.Context) (bool, error) {
		_, err := dc.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// createWidget creates the widget name in p's workspace, retrying while the
// bound resource is not served yet, and returns its name.
func createWidget(ctx context.Context, t *testing.T, s *server.KCP, p *identityProvider, name string) string {
	t.Helper()
	dc := dynamicFor(t, s, p.cluster)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": identityGroup + "/" + identityVersion,
		"kind":       "Widget",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"owner": p.tag},
	}}
	var last error
	poll(ctx, t, "creating widget "+name+" in "+p.cluster, func(ctx context.Context) (bool, error) {
		_, last = dc.Resource(widgetsGVR).Create(ctx, obj, metav1.CreateOptions{})
		if last == nil || apierrors.IsAlreadyExists(last) {
			return true, nil
		}
		return false, nil
	})
	return name
}

// poll runs cond every 200 ms until it holds, failing t when ctx ends first.
func poll(ctx context.Context, t *testing.T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// wildcardClient sends the shard admin's wildcard requests for widgets.
type wildcardClient struct {
	base    string
	version string
	hc      *http.Client
}

// at is the same client for widgets at version.
func (c *wildcardClient) at(version string) *wildcardClient {
	at := *c
	at.version = version
	return &at
}

func newWildcardClient(t *testing.T, s *server.KCP) *wildcardClient {
	t.Helper()
	cfg := s.Config()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &wildcardClient{base: strings.TrimSuffix(cfg.Host, "/"), version: identityVersion, hc: hc}
}

// path is the wildcard collection of widgets, through identity when given.
func (c *wildcardClient) path(identity string) string {
	r := identityResource
	if identity != "" {
		r += ":" + identity
	}
	return c.base + "/clusters/*/apis/" + identityGroup + "/" + c.version + "/" + r
}

// list sends one wildcard LIST, partial metadata or full objects, and
// returns its items and the list's resourceVersion.
func (c *wildcardClient) list(ctx context.Context, t *testing.T, identity, rv string, partial bool) ([]seenObject, string) {
	t.Helper()
	q := url.Values{}
	if rv != "" {
		q.Set("resourceVersion", rv)
	}
	u := c.path(identity)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantKind := identityGroup + "/" + c.version + " WidgetList"
	if partial {
		req.Header.Set("Accept", partialmeta.ListAccept(partialmeta.V1))
		wantKind = "meta.k8s.io/v1 PartialObjectMetadataList"
	}
	// A storage the request is the first to need answers 429 with
	// Retry-After until its watch cache is ready: retry, as client-go does.
	var resp *http.Response
	var body []byte
	poll(ctx, t, "LIST "+u, func(ctx context.Context) (bool, error) {
		resp, err = c.hc.Do(req.Clone(ctx))
		if err != nil {
			t.Fatalf("LIST %s: %v", u, err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode != http.StatusTooManyRequests, nil
	})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("LIST %s (partial %t): %s: %s", u, partial, resp.Status, body)
	}
	var list struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("LIST %s: %v", u, err)
	}
	if got := list.APIVersion + " " + list.Kind; got != wantKind {
		t.Fatalf("LIST %s (partial %t) answered %s, want %s", u, partial, got, wantKind)
	}
	out := make([]seenObject, 0, len(list.Items))
	for _, it := range list.Items {
		out = append(out, seenObject{Name: it.Metadata.Name, Cluster: it.Metadata.Annotations["kcp.io/cluster"]})
	}
	return out, list.Metadata.ResourceVersion
}

// tryList sends one wildcard partial-metadata LIST through identity and
// returns its items, or an error for any answer but 200.
func (c *wildcardClient) tryList(ctx context.Context, identity string) ([]seenObject, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.path(identity), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", partialmeta.ListAccept(partialmeta.V1))
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("LIST %s: %s: %s", req.URL, resp.Status, body)
	}
	var list struct {
		Items []struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("LIST %s: %w", req.URL, err)
	}
	out := make([]seenObject, 0, len(list.Items))
	for _, it := range list.Items {
		out = append(out, seenObject{Name: it.Metadata.Name, Cluster: it.Metadata.Annotations["kcp.io/cluster"]})
	}
	return out, nil
}

// openWatch is one wildcard partial-metadata WATCH being read.
type openWatch struct {
	url    string
	mu     sync.Mutex
	events []seenObject
	err    error
	more   chan struct{}
}

// watch opens a wildcard partial-metadata WATCH of widgets (through
// identity when given) from the resourceVersion of a LIST just before, and
// reads its events until ctx ends.
func (c *wildcardClient) watch(ctx context.Context, t *testing.T, identity string) *openWatch {
	t.Helper()
	_, rv := c.list(ctx, t, identity, "", true)
	u := c.path(identity) + "?" + url.Values{"watch": {"true"}, "resourceVersion": {rv}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", partialmeta.ObjectAccept(partialmeta.V1))
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("WATCH %s: %v", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("WATCH %s: %s: %s", u, resp.Status, body)
	}
	w := &openWatch{url: u, more: make(chan struct{}, 1)}
	go func() {
		defer resp.Body.Close()
		dec := json.NewDecoder(bufio.NewReader(resp.Body))
		for {
			var ev struct {
				Type   string `json:"type"`
				Object struct {
					APIVersion string            `json:"apiVersion"`
					Kind       string            `json:"kind"`
					Metadata   metav1.ObjectMeta `json:"metadata"`
				} `json:"object"`
			}
			err := dec.Decode(&ev)
			w.mu.Lock()
			switch {
			case err != nil:
				w.err = err
			case ev.Type == "ERROR":
				w.err = fmt.Errorf("an ERROR event: %s", ev.Object.Kind)
			case ev.Type != "BOOKMARK":
				if got := ev.Object.APIVersion + " " + ev.Object.Kind; got != "meta.k8s.io/v1 PartialObjectMetadata" {
					w.err = fmt.Errorf("a %s event of %s, want partial metadata", ev.Type, got)
				} else {
					w.events = append(w.events, seenObject{Name: ev.Object.Metadata.Name, Cluster: ev.Object.Metadata.Annotations["kcp.io/cluster"]})
				}
			}
			stop := w.err != nil
			w.mu.Unlock()
			select {
			case w.more <- struct{}{}:
			default:
			}
			if stop {
				return
			}
		}
	}()
	return w
}

// until waits (up to 30 s) until the watch has sent an event of each of
// names, and returns every event it sent until then.
func (w *openWatch) until(t *testing.T, names ...string) []seenObject {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		w.mu.Lock()
		events, err := slices.Clone(w.events), w.err
		w.mu.Unlock()
		seen := map[string]bool{}
		for _, e := range events {
			seen[e.Name] = true
		}
		all := true
		for _, n := range names {
			all = all && seen[n]
		}
		if all {
			return events
		}
		if err != nil {
			t.Fatalf("WATCH %s ended before %v, after %v: %v", w.url, names, events, err)
		}
		select {
		case <-w.more:
		case <-deadline:
			t.Fatalf("WATCH %s: no event of %v within 30 s; it sent %v", w.url, names, events)
		}
	}
}

// endsWithin waits up to d for the watch to end and returns why it ended,
// or nil if it is still open.
func (w *openWatch) endsWithin(d time.Duration) error {
	deadline := time.After(d)
	for {
		w.mu.Lock()
		err := w.err
		w.mu.Unlock()
		if err != nil {
			return err
		}
		select {
		case <-w.more:
		case <-deadline:
			return nil
		}
	}
}

// TestCrossTalk is the assertion's own check, without kcp: an answer with
// only the identity's objects is clean, one with an object of the other
// identity (whatever cluster kcp says it lives in) or with an own object
// from another cluster is foreign, and an own object not returned is missing.
func TestCrossTalk(t *testing.T) {
	a := identityProvider{tag: "a", cluster: "ca", objects: []string{"a-0", "a-1"}}
	for _, tc := range []struct {
		name             string
		got              []seenObject
		foreign, missing []string
	}{
		{name: "own only", got: []seenObject{{"a-1", "ca"}, {"a-0", "ca"}}},
		{name: "the other's too", got: []seenObject{{"a-0", "ca"}, {"b-0", "cb"}, {"a-1", "ca"}}, foreign: []string{"cb|b-0"}},
		{name: "the other's, said to be in a's cluster", got: []seenObject{{"a-0", "ca"}, {"a-1", "ca"}, {"b-0", "ca"}}, foreign: []string{"ca|b-0"}},
		{name: "an own name from another cluster", got: []seenObject{{"a-0", "ca"}, {"a-1", "cb"}}, foreign: []string{"cb|a-1"}, missing: []string{"ca|a-1"}},
		{name: "nothing", missing: []string{"ca|a-0", "ca|a-1"}},
	} {
		foreign, missing := crossTalk(a, tc.got)
		if !slices.Equal(foreign, tc.foreign) || !slices.Equal(missing, tc.missing) {
			t.Errorf("%s: foreign %v, missing %v; want %v, %v", tc.name, foreign, missing, tc.foreign, tc.missing)
		}
	}
}

// TestRealKCPFrontProxyRefusesWildcard: who can send a wildcard
// partial-metadata request through an identity (docs/identity.md, "Who can
// send it"). On kcp's sharded topology (KCP_BIN_DIR or bin/: kcp,
// kcp-front-proxy, cache-server, virtual-workspaces, one shard), the
// front-proxy's admin gets the root workspace's APIExports through the
// front-proxy, and 403 for the same LIST across all logical clusters, as
// partial metadata, without and with an identity: the front-proxy has no
// shard for "*". The shard admin, a client of the shard itself, gets it from
// the shard. Nothing here depends on kcp-patches/: the front-proxy is kcp's.
func TestRealKCPFrontProxyRefusesWildcard(t *testing.T) {
	if testing.Short() {
		t.Skip("live sharded kcp: run without -short")
	}
	binDir := filepath.Join(testfs.RepoRoot(t), "bin")
	if d := os.Getenv(EnvKCPBinDir); d != "" {
		binDir = d
	}
	bins := server.TopologyBinariesIn(binDir, "")
	for _, bin := range bins.All() {
		if _, err := os.Stat(bin); err != nil {
			t.Skipf("sharded kcp: %s is missing: `carry build --kcp-source <tree> --cmd %s --out %s`", bin, strings.Join(server.TopologyCommands, " --cmd "), binDir)
		}
	}
	topo := servertest.StartTopology(t, server.TopologyOptions{Binaries: bins, Dir: t.TempDir(), Shards: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	get := func(cfg *rest.Config, path string) (int, string) {
		t.Helper()
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", partialmeta.ListAccept(partialmeta.V1))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(body))
	}
	const exports = "/apis/apis.kcp.io/v1alpha2/apiexports"
	frontProxy := topo.FrontProxyConfig()
	if code, body := get(frontProxy, "/clusters/root"+exports); code != http.StatusOK {
		t.Fatalf("the control: the front-proxy's admin listing root's APIExports through the front-proxy: %d %s", code, body)
	}
	for _, path := range []string{"/clusters/*" + exports, "/clusters/*" + exports + ":0123456789abcdef"} {
		code, body := get(frontProxy, path)
		if code != http.StatusForbidden {
			t.Errorf("GET %s through the front-proxy as its admin: %d %s; want 403", path, code, body)
			continue
		}
		t.Logf("GET %s through the front-proxy as its admin: %d %s", path, code, body)
	}
	shard, err := topo.ShardConfig(0)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get(shard, "/clusters/*"+exports); code != http.StatusOK {
		t.Errorf("GET /clusters/*%s from the root shard as its admin: %d %s; want 200 (a client of the shard)", exports, code, body)
	}
}
