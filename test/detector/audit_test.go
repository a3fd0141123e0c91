package detector

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cm "github.com/kcp-carry/kcp-carry/pkg/harness/cachemutation"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// TestPristineAuditPaths: what the detector says for the read paths of
// docs/read-path-audit.md the matrix does not cover, on the pristine fork.
// Each case seeds fresh objects in a cluster of its own and counts the
// findings its requests cause.
func TestPristineAuditPaths(t *testing.T) {
	s := startShard(t, server.ShardBuild{Pristine: true}, true)
	c := newClient(t, s)
	n := 0
	fresh := func(t *testing.T, r resource) string {
		n++
		cluster := fmt.Sprintf("audit-%02d", n)
		seedResource(t, s, r, cluster, cellObjects)
		c.mustGet(t, r.collectionPath(cluster), url.Values{}, acceptJSON) // the cache has them
		waitIdle(t, s)
		return cluster
	}
	// caused returns the findings after the case's requests, once every
	// read was compared.
	caused := func(t *testing.T, before int) []cm.Finding {
		return settledFindings(t, s)[before:]
	}

	// asTable with includeObject=Object converts each item to the request's
	// version (scheme.ConvertToVersion into new objects) and with None drops
	// it; neither writes the cached objects.
	for _, include := range []string{"Object", "None", "Metadata"} {
		t.Run("table includeObject="+include, func(t *testing.T) {
			for _, r := range matrixResources {
				fresh(t, r)
				before, shared := len(findings(t, s)), handouts(t, s, r, "list", cm.SharingShared)
				resp := c.mustGet(t, r.collectionPath("*"), url.Values{"includeObject": {include}}, acceptTable)
				if n, _, err := listMeta(resp); err != nil || n < len(cellObjects) {
					t.Fatalf("%s: %d rows, %v", r.name, n, err)
				}
				if fs := caused(t, before); len(fs) != 0 {
					t.Errorf("%s: Table (includeObject=%s) wrote into the cache: %v", r.name, include, fs)
				}
				if handouts(t, s, r, "list", cm.SharingShared) == shared {
					t.Errorf("%s: the detector compared no shared object", r.name)
				}
			}
		})
	}

	// A watch-list (sendInitialEvents) sends the cache's objects as initial
	// events: deep copies (cacheWatcher's getMutableObject), so the pristine
	// fork's annotation write on wildcard partial-metadata events lands in a
	// private copy (the events carry it; the cache does not). Live events are
	// cachingObjects whose encoding works on GetObject()'s deep copy.
	t.Run("watch-list wildcard partial metadata", func(t *testing.T) {
		for _, r := range matrixResources {
			cluster := fresh(t, r)
			before, private := len(findings(t, s)), handouts(t, s, r, "watch", cm.SharingPrivate)
			q := url.Values{"sendInitialEvents": {"true"}, "resourceVersionMatch": {"NotOlderThan"}, "allowWatchBookmarks": {"true"}}
			// The initial events carry the objects' names; then a live event.
			tok := fmt.Sprintf("wl-%s", cluster)
			stream := c.watchUntil(t, r.collectionPath("*"), q, acceptPartialV1Object, func() { touch(t, s, r, cluster, "m-1", tok) }, tok)
			// The fork did write the annotation — into the events' copies.
			if !strings.Contains(string(stream), `"`+leakKey+`":""`) {
				t.Errorf("%s: the events do not carry %s=\"\": the write this case is about did not happen", r.name, leakKey)
			}
			if fs := caused(t, before); len(fs) != 0 {
				t.Errorf("%s: the watch-list wrote into the cache: %v", r.name, fs)
			}
			if handouts(t, s, r, "watch", cm.SharingPrivate) == private {
				t.Errorf("%s: no initial event was handed out", r.name)
			}
		}
	})

	// The pollution outlives the cache: a merge PATCH is applied to the
	// object the cacher suggests to GuaranteedUpdate — a deep copy of the
	// polluted cached object — so the leaked annotation is written to etcd.
	// (A PUT of the client's own object does not carry it.) Not a read-path
	// write, so not a finding: the consequence of one.
	t.Run("patch persists the pollution", func(t *testing.T) {
		cluster := fresh(t, clusterRoles)
		before := len(findings(t, s))
		c.mustGet(t, clusterRoles.collectionPath("*"), url.Values{}, acceptPartialV1)
		fs := caused(t, before)
		polluted := false
		for _, f := range fs {
			polluted = polluted || (f.Cluster == cluster && f.Name == "m-1")
		}
		if !polluted {
			t.Fatalf("the wildcard partial LIST did not write %s|m-1: %v", cluster, fs)
		}
		k := kube(t, s, cluster)
		fromEtcd, err := k.RbacV1().ClusterRoles().Get(context.Background(), "m-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := fromEtcd.Annotations[leakKey]; ok {
			t.Fatalf("etcd had %s before any write: %v", leakKey, fromEtcd.Annotations)
		}
		touch(t, s, clusterRoles, cluster, "m-1", "persist")
		fromEtcd, err = k.RbacV1().ClusterRoles().Get(context.Background(), "m-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := fromEtcd.Annotations[leakKey]; !ok {
			t.Errorf("after a merge PATCH etcd does not have %s: %v", leakKey, fromEtcd.Annotations)
		} else {
			t.Logf("after one wildcard partial LIST and a label PATCH, etcd has %s=%q", leakKey, v)
		}
	})
}

// requirePatchDoesNotPersist is the patched fork's side of "patch persists
// the pollution": after a wildcard partial-metadata LIST and a merge PATCH,
// etcd has no kcp.io/original-api-version.
func requirePatchDoesNotPersist(t *testing.T, s *server.Shard) {
	t.Helper()
	const cluster = "persist"
	seedResource(t, s, clusterRoles, cluster, cellObjects)
	c := newClient(t, s)
	c.mustGet(t, clusterRoles.collectionPath("*"), url.Values{}, acceptPartialV1)
	touch(t, s, clusterRoles, cluster, "m-1", "persist")
	fromEtcd, err := kube(t, s, cluster).RbacV1().ClusterRoles().Get(context.Background(), "m-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := fromEtcd.Annotations[leakKey]; ok {
		t.Errorf("the patched fork: after a wildcard partial LIST and a PATCH, etcd has %s=%q", leakKey, v)
	}
}
