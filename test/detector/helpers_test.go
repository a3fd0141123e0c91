package detector

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	cm "github.com/kcp-carry/kcp-carry/pkg/harness/cachemutation"
	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server/servertest"
)

const (
	// leakKey is the annotation the pristine fork writes into the cache.
	leakKey = "kcp.io/original-api-version"
	// leakPath is how the detector names it.
	leakPath = `metadata.annotations["kcp.io/original-api-version"]`

	// compareInterval is the period of the shards' detector comparisons.
	compareInterval = 200 * time.Millisecond
	// findingsTimeout bounds the wait for findings that should come.
	findingsTimeout = 30 * time.Second
	// requestTimeout bounds every request (a watch: until its event).
	requestTimeout = 30 * time.Second
)

// Accept headers of the requests outside the matrix, from the catalogue.
var (
	acceptJSON     = requestshape.JSON.Header(requestshape.List)
	acceptProtobuf = requestshape.Protobuf.Header(requestshape.List)
	acceptTable    = requestshape.Table.Header(requestshape.List)
	// acceptPartialV1 is a partial-metadata LIST's, acceptPartialV1Object a
	// GET's or WATCH's.
	acceptPartialV1       = requestshape.PartialV1.Header(requestshape.List)
	acceptPartialV1Object = requestshape.PartialV1.Header(requestshape.Watch)
)

// resource is a resource the test shard serves.
type resource struct {
	name       string // clusterroles, configmaps
	group      string // for metrics and findings
	apiPrefix  string // /apis/rbac.authorization.k8s.io/v1 or /api/v1
	namespaced bool
}

var (
	clusterRoles = resource{name: "clusterroles", group: "rbac.authorization.k8s.io", apiPrefix: "/apis/rbac.authorization.k8s.io/v1"}
	configMaps   = resource{name: "configmaps", apiPrefix: "/api/v1", namespaced: true}
)

// namespace of the seeded ConfigMaps.
const namespace = "default"

// findingResource is Finding.Resource for r.
func (r resource) findingResource() string {
	if r.group == "" {
		return r.name
	}
	return r.name + "." + r.group
}

// collectionPath is the path of r's collection in cluster ("*": all
// clusters, and for ConfigMaps all namespaces).
func (r resource) collectionPath(cluster string) string {
	p := "/clusters/" + cluster + r.apiPrefix
	if r.namespaced && cluster != "*" {
		p += "/namespaces/" + namespace
	}
	return p + "/" + r.name
}

func (r resource) objectPath(cluster, name string) string {
	return r.collectionPath(cluster) + "/" + name
}

// startShard starts a shard with the detector on. expect: the test asserts
// on findings itself; otherwise any finding fails the test (test mode).
func startShard(t *testing.T, v server.ShardBuild, expect bool) *server.Shard {
	t.Helper()
	s := servertest.StartShard(t, server.ShardOptions{
		Binary:                servertest.ShardBinary(t, v),
		CacheMutationDetector: true,
		ExpectCacheMutations:  expect,
		Args:                  []string{"--cache-mutation-detector-interval=" + compareInterval.String()},
	})
	if !s.CacheMutationDetector() {
		t.Fatal("the shard does not run the cache mutation detector")
	}
	return s
}

// client sends raw requests to a shard.
type client struct {
	base string
	http *http.Client
	cfg  *rest.Config
}

func newClient(t *testing.T, s *server.Shard) *client {
	t.Helper()
	rt, err := rest.TransportFor(s.Config())
	if err != nil {
		t.Fatal(err)
	}
	return &client{base: s.URL(), http: &http.Client{Transport: rt}, cfg: s.Config()}
}

// response is a finished request.
type response struct {
	status      int
	contentType string
	body        []byte
}

// get sends GET path?query with Accept and reads the whole answer.
func (c *client) get(ctx context.Context, path string, query url.Values, accept string) (*response, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path+"?"+query.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	return &response{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: body}, nil
}

// mustGet is get that fails the test unless the answer is 200.
func (c *client) mustGet(t *testing.T, path string, query url.Values, accept string) *response {
	t.Helper()
	r, err := c.get(context.Background(), path, query, accept)
	if err != nil {
		t.Fatalf("GET %s?%s (Accept %s): %v", path, query.Encode(), accept, err)
	}
	if r.status != http.StatusOK {
		t.Fatalf("GET %s?%s (Accept %s): %d %s", path, query.Encode(), accept, r.status, truncate(r.body))
	}
	return r
}

// watchQuery is query as a watch sends it: watch=true and a timeout.
func watchQuery(query url.Values) url.Values {
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	q.Set("watch", "true")
	q.Set("timeoutSeconds", fmt.Sprint(int(requestTimeout/time.Second)))
	return q
}

// watchUntil opens a watch (GET path?watchQuery(query)), calls trigger once
// the server answered, and reads the stream until it contains token or
// requestTimeout passes. It returns what it read.
func (c *client) watchUntil(t *testing.T, path string, query url.Values, accept string, trigger func(), token string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	q := watchQuery(query)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path+"?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatalf("WATCH %s?%s (Accept %s): %v", path, q.Encode(), accept, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		t.Fatalf("WATCH %s?%s (Accept %s): %d %s", path, q.Encode(), accept, resp.StatusCode, truncate(b))
	}
	trigger()
	var seen bytes.Buffer
	buf := make([]byte, 32<<10)
	for !bytes.Contains(seen.Bytes(), []byte(token)) {
		n, err := resp.Body.Read(buf)
		seen.Write(buf[:n])
		if err != nil {
			t.Fatalf("WATCH %s?%s (Accept %s): no event with %q before %v (%d bytes read)", path, q.Encode(), accept, token, err, seen.Len())
		}
		if seen.Len() > 16<<20 {
			t.Fatalf("WATCH %s: 16 MiB without %q", path, token)
		}
	}
	return seen.Bytes()
}

func truncate(b []byte) string {
	if len(b) > 512 {
		return string(b[:512]) + "..."
	}
	return string(b)
}

var protobufSerializer = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

// listMeta returns the number of items and the continue token of a LIST
// answer in any of the matrix's media types.
func listMeta(r *response) (items int, cont string, err error) {
	if strings.HasPrefix(r.contentType, acceptProtobuf) {
		obj, _, err := protobufSerializer.Decode(r.body, nil, nil)
		if err != nil {
			return 0, "", fmt.Errorf("decoding protobuf list: %w", err)
		}
		objs, err := meta.ExtractList(obj)
		if err != nil {
			return 0, "", err
		}
		la, err := meta.ListAccessor(obj)
		if err != nil {
			return 0, "", err
		}
		return len(objs), la.GetContinue(), nil
	}
	var l struct {
		Metadata struct {
			Continue string `json:"continue"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
		Rows  []json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(r.body, &l); err != nil {
		return 0, "", fmt.Errorf("decoding list (%s): %w: %s", r.contentType, err, truncate(r.body))
	}
	return len(l.Items) + len(l.Rows), l.Metadata.Continue, nil
}

// partialList decodes a PartialObjectMetadataList answer (JSON).
func partialList(t *testing.T, r *response) *metav1.PartialObjectMetadataList {
	t.Helper()
	l := &metav1.PartialObjectMetadataList{}
	if err := json.Unmarshal(r.body, l); err != nil {
		t.Fatalf("decoding PartialObjectMetadataList: %v: %s", err, truncate(r.body))
	}
	return l
}

// kube is a typed client for one logical cluster.
func kube(t *testing.T, s *server.Shard, cluster string) kubernetes.Interface {
	t.Helper()
	k, err := kubernetes.NewForConfig(s.ClusterConfig(cluster))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// seed creates n ClusterRoles and n ConfigMaps named <prefix>-<i> in
// cluster, labelled suite=<cluster> and parity=even|odd, and returns their
// names.
func seed(t *testing.T, s *server.Shard, cluster, prefix string, n int) []string {
	t.Helper()
	ctx := context.Background()
	k := kube(t, s, cluster)
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		parity := map[bool]string{true: "even", false: "odd"}[i%2 == 0]
		labels := map[string]string{"suite": cluster, "parity": parity}
		_, err := k.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{"seeded-by": "test/detector"}},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating ClusterRole %s|%s: %v", cluster, name, err)
		}
		_, err = k.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels, Annotations: map[string]string{"seeded-by": "test/detector"}},
			Data:       map[string]string{"key": "value", "other": "data"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating ConfigMap %s|%s/%s: %v", cluster, namespace, name, err)
		}
		names = append(names, name)
	}
	return names
}

// touch sets label touch=<token> on r's object name in cluster (a merge
// patch), so a watch sees a MODIFIED event carrying token.
func touch(t *testing.T, s *server.Shard, r resource, cluster, name, token string) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{"touch":%q}}}`, token))
	k := kube(t, s, cluster)
	var err error
	if r.namespaced {
		_, err = k.CoreV1().ConfigMaps(namespace).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
	} else {
		_, err = k.RbacV1().ClusterRoles().Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil {
		t.Fatalf("patching %s %s|%s: %v", r.name, cluster, name, err)
	}
}

// findings reads the shard's findings so far.
func findings(t *testing.T, s *server.Shard) []cm.Finding {
	t.Helper()
	fs, err := s.CacheMutationFindings()
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// waitFindings waits until the shard reported at least n findings or
// findingsTimeout passed, then returns them all once settled.
func waitFindings(t *testing.T, s *server.Shard, n int) []cm.Finding {
	t.Helper()
	// A timeout is not an error here: the caller asserts on what came.
	_ = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, findingsTimeout, true, func(context.Context) (bool, error) {
		return len(findings(t, s)) >= n, nil
	})
	return settledFindings(t, s)
}

// settledFindings returns the findings once no more can come from the
// requests sent so far: the detector holds no object of a finished request
// (each was compared at its completion), and the shard's stderr shows as many
// findings as the detector counted.
func settledFindings(t *testing.T, s *server.Shard) []cm.Finding {
	t.Helper()
	var fs []cm.Finding
	var holding, counted float64
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, findingsTimeout, true, func(context.Context) (bool, error) {
		if holding = metric(t, s, "holding_requests", nil); holding != 0 {
			return false, nil
		}
		fs, counted = findings(t, s), metric(t, s, "findings_total", nil)
		return float64(len(fs)) == counted, nil
	})
	if err != nil {
		t.Fatalf("the findings did not settle within %s: %v holding requests, %d findings on stderr, %v counted", findingsTimeout, holding, len(fs), counted)
	}
	return fs
}

// metric sums a detector metric on the shard.
func metric(t *testing.T, s *server.Shard, name string, labels map[string]string) float64 {
	t.Helper()
	m, err := s.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return m.Sum("watch_cache_mutation_detector_"+name, labels)
}

// handouts is handouts_total for r, operation and sharing ("" = any).
func handouts(t *testing.T, s *server.Shard, r resource, operation, sharing string) float64 {
	t.Helper()
	l := map[string]string{"resource": r.name, "operation": operation}
	if sharing != "" {
		l["sharing"] = sharing
	}
	return metric(t, s, "handouts_total", l)
}

// seedLabels are the labels seedResource gives name in cluster:
// parity=even|odd by the number in its name.
func seedLabels(cluster, name string) map[string]string {
	var i int
	_, _ = fmt.Sscanf(name[strings.LastIndex(name, "-")+1:], "%d", &i)
	return map[string]string{"suite": cluster, "parity": map[bool]string{true: "even", false: "odd"}[i%2 == 0]}
}

// seedResource creates objects of r with names in cluster, labelled
// seedLabels, with one extra annotation.
func seedResource(t *testing.T, s *server.Shard, r resource, cluster string, names []string) {
	t.Helper()
	ctx := context.Background()
	k := kube(t, s, cluster)
	for _, name := range names {
		om := metav1.ObjectMeta{Name: name, Labels: seedLabels(cluster, name), Annotations: map[string]string{"seeded-by": "test/detector"}}
		var err error
		if r.namespaced {
			om.Namespace = namespace
			_, err = k.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: om, Data: map[string]string{"key": "value"}}, metav1.CreateOptions{})
		} else {
			_, err = k.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: om,
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatalf("creating %s %s|%s: %v", r.name, cluster, name, err)
		}
	}
}

// waitIdle waits until the detector compared every read at its request's
// completion (holding_requests is 0), so the next request's writes cannot
// be attributed to an earlier request that was still being torn down.
func waitIdle(t *testing.T, s *server.Shard) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, requestTimeout, true, func(context.Context) (bool, error) {
		return metric(t, s, "holding_requests", nil) == 0, nil
	})
	if err != nil {
		t.Fatalf("the shard still holds objects of finished requests after %s", requestTimeout)
	}
}
