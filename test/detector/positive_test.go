package detector

import (
	"net/url"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	cm "github.com/kcp-carry/kcp-carry/pkg/harness/cachemutation"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// TestPristineOneWildcardPartialListIsCaught is the detector's positive
// control: on the fork as kcp v0.32.3 ships it, ONE wildcard
// partial-metadata LIST of ClusterRoles — one request, no concurrency — is
// reported, for every object it listed, as a write of
// metadata.annotations["kcp.io/original-api-version"] into the watch cache,
// naming the request. If the detector does not fire, it has lost its teeth
// and this test fails.
func TestPristineOneWildcardPartialListIsCaught(t *testing.T) {
	s := startShard(t, server.ShardBuild{Pristine: true}, true)
	const cluster = "positive"
	seeded := seed(t, s, cluster, "cr", 5)
	if fs := findings(t, s); len(fs) != 0 {
		t.Fatalf("findings before the request: %v", fs)
	}

	c := newClient(t, s)
	path := clusterRoles.collectionPath("*")
	resp := c.mustGet(t, path, url.Values{}, acceptPartialV1)
	listed := partialList(t, resp)
	if len(listed.Items) < len(seeded) {
		t.Fatalf("the wildcard LIST returned %d items, want at least the %d seeded", len(listed.Items), len(seeded))
	}

	fs := waitFindings(t, s, len(listed.Items))
	byObject := map[string]cm.Finding{}
	for _, f := range fs {
		byObject[f.Cluster+"|"+f.Name] = f
	}
	if len(fs) != len(listed.Items) || len(byObject) != len(listed.Items) {
		t.Errorf("%d findings for %d distinct objects after one LIST of %d objects, want one per object:\n%v", len(fs), len(byObject), len(listed.Items), fs)
	}
	want := cm.Request{Verb: "list", Method: "GET", Path: path, Accept: acceptPartialV1}
	for _, item := range listed.Items {
		key := item.Annotations["kcp.io/cluster"] + "|" + item.Name
		f, ok := byObject[key]
		if !ok {
			t.Errorf("no finding for listed %s", key)
			continue
		}
		if f.Resource != clusterRoles.findingResource() || f.ResourceVersion != item.ResourceVersion || string(item.UID) != f.UID {
			t.Errorf("%s: finding names %s rv %s uid %s, want %s rv %s uid %s", key, f.Resource, f.ResourceVersion, f.UID, clusterRoles.findingResource(), item.ResourceVersion, item.UID)
		}
		if !cmp.Equal(f.Paths, []string{leakPath}) {
			t.Errorf("%s: changed paths %v, want [%s]", key, f.Paths, leakPath)
		}
		if diff := cmp.Diff(want, f.Request); diff != "" {
			t.Errorf("%s: request (-want +got):\n%s", key, diff)
		}
		if f.HandOut != "list" || f.Sharing != cm.SharingShared {
			t.Errorf("%s: hand-out %s, sharing %s; want list, shared", key, f.HandOut, f.Sharing)
		}
	}
	var names []string
	for _, f := range fs {
		if f.Cluster == cluster {
			names = append(names, f.Name)
		}
	}
	sort.Strings(names)
	if !cmp.Equal(names, seeded) {
		t.Errorf("findings in cluster %s name %v, want the seeded %v", cluster, names, seeded)
	}
	if got := metric(t, s, "findings_total", map[string]string{"group": clusterRoles.group, "resource": clusterRoles.name, "verb": "list"}); got != float64(len(fs)) {
		t.Errorf("findings_total{clusterroles,list} = %v, want %d", got, len(fs))
	}
	if len(fs) > 0 {
		t.Logf("positive control: %d findings after one request, e.g.\n  %s\n%s", len(fs), fs[0], fs[0].Diff)
	}
}
