package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kcp-dev/logicalcluster/v3"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/scrub"
	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server/servertest"
)

// scrubObjects is how many objects of each resource the scrub scenario seeds
// and pollutes in each logical cluster.
const scrubObjects = 10

// scrubServer is one server of the scrub scenario: the shard admin's config
// (base URL, /clusters/* allowed), its exit, and how to stop it.
type scrubServer struct {
	cfg      *rest.Config
	clusters []string // the logical clusters to seed in (set by the pristine one)
	done     <-chan struct{}
	stop     func() error
}

// scrubScenario is the upgrade the scrub is for: the pristine build on some
// storage, then the carried build on the same storage.
type scrubScenario struct {
	// startPristine starts the pristine build on fresh storage.
	startPristine func(t *testing.T) scrubServer
	// startCarried starts the carried build on the same storage.
	startCarried func(t *testing.T) scrubServer
	// carryStamped says whether the carried build's /version carries the
	// carry's stamp (a `carry build` of kcp does, the test shard does not,
	// so the scrub needs --force there).
	carryStamped bool
}

// TestScrubShardAfterUpgrade runs the scrub scenario on the test shard: the
// pristine shard is polluted and persists "" on a PATCH, the patched shard
// restarts on the same root directory (its embedded etcd keeps the data),
// and the scrub removes exactly that. The scrub is `carry scrub` with
// kubectl's --server and --certificate-authority (the test shard admits
// loopback clients without credentials). The test shard's /version has no
// carry stamp, so the apply passes --force; the refusal without it is
// asserted on the pristine shard.
func TestScrubShardAfterUpgrade(t *testing.T) {
	pristine := servertest.ShardBinary(t, server.ShardBuild{Pristine: true})
	patched := servertest.ShardBinary(t, servertest.PatchedShard())
	rootDir := filepath.Join(t.TempDir(), "shard")
	start := func(bin string) func(t *testing.T) scrubServer {
		return func(t *testing.T) scrubServer {
			s := servertest.StartShard(t, server.ShardOptions{Binary: bin, Env: serverEnv, Args: []string{"--root-dir=" + rootDir}})
			return scrubServer{cfg: s.Config(), clusters: e2eClusters, done: s.Done(), stop: func() error {
				expectNoRace(t, s)
				return s.Stop()
			}}
		}
	}
	runScrubScenario(t, scrubScenario{
		startPristine: start(pristine),
		startCarried:  start(patched),
	})
}

// TestRealKCPScrubAfterUpgrade runs the scrub scenario on real kcp: stock
// kcp v0.32.3 (bin/kcp-pristine) in root and two workspaces, then the carry
// build (bin/kcp) on the same root directory. The scrub is `carry scrub`
// with kubectl's --server, --certificate-authority and the shard admin's
// credentials (shard-base's --token, or --client-certificate and
// --client-key), not a kubeconfig context.
func TestRealKCPScrubAfterUpgrade(t *testing.T) {
	pristine := kcpBinary(t, "pristine")
	patched := kcpBinary(t, "patched")
	rootDir := t.TempDir()
	runScrubScenario(t, scrubScenario{
		startPristine: func(t *testing.T) scrubServer {
			s, clusters := startKCPWithWorkspaces(t, pristine, rootDir)
			return scrubServer{cfg: s.Config(), clusters: clusters, done: s.Done(), stop: s.Stop}
		},
		startCarried: func(t *testing.T) scrubServer {
			s := startKCP(t, patched, rootDir)
			return scrubServer{cfg: s.Config(), done: s.Done(), stop: s.Stop}
		},
		carryStamped: true,
	})
}

func runScrubScenario(t *testing.T, sc scrubScenario) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bin := carryBinary(t)

	// Pristine: seed, one wildcard partial LIST per resource (pollutes the
	// watch cache), then a merge PATCH of each object (stores "" in etcd).
	p := sc.startPristine(t)
	o := scrubHammerOptions(t, p)
	rep := runSequentialProbe(t, o)
	if b := rep.Result(checks.Pollution); !b.Violated() {
		t.Fatalf("one wildcard partial LIST did not pollute the pristine build: %+v", b)
	}
	seeded := seededRefs(o)
	for _, ref := range seeded {
		dc := clusterDynamic(t, p.cfg, ref.cluster)
		patch := []byte(`{"metadata":{"labels":{"e2e.kcp-carry.io/touched":"yes"}}}`)
		if _, err := dc.Resource(gvrOf(ref.resource)).Namespace(ref.namespace).Patch(ctx, ref.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("merge PATCH of %s: %v", ref, err)
		}
	}
	polluted := storedPolluted(t, ctx, p.cfg, scrubResources(o))
	for _, ref := range seeded {
		if v, ok := polluted[scrubKey(ref)]; !ok || v != "" {
			t.Fatalf("after a merge PATCH on the pristine build, %s does not carry %s=\"\" in etcd (value %q, present %t)", ref, scrub.Annotation, v, ok)
		}
	}
	t.Logf("pristine build: %d seeded objects carry %s=\"\" in etcd after probe+PATCH", len(seeded), scrub.Annotation)

	// The refusal: --apply against the pristine build writes nothing.
	refused := runScrub(t, ctx, bin, p.cfg, scrub.Options{Apply: true})
	if refused.ExitCode != scrub.ExitRefused || !strings.Contains(refused.Refused, "not a carry build") || refused.Totals.Scanned != 0 {
		t.Errorf("--apply without --force against the pristine build: outcome %s (exit %d), refused %q, scanned %d; want refused before scanning",
			refused.Outcome, refused.ExitCode, refused.Refused, refused.Totals.Scanned)
	}
	if after := storedPolluted(t, ctx, p.cfg, scrubResources(o)); len(after) != len(polluted) {
		t.Errorf("the refused scrub changed the stored objects: %d carry the key now, %d before", len(after), len(polluted))
	}
	if err := p.stop(); err != nil {
		t.Logf("stopping the pristine build: %v", err)
	}

	// Upgrade: the carried build on the same storage still serves "".
	c := sc.startCarried(t)
	planted := objectRef{resource: hammer.ConfigMaps, cluster: o.Clusters[0], namespace: o.Namespace, name: "scrub-planted"}
	plant(t, ctx, c.cfg, planted, "v1")

	dry := runScrub(t, ctx, bin, c.cfg, scrub.Options{})
	resources := scannedResources(dry)
	truth := storedPolluted(t, ctx, c.cfg, resources)
	var wantPolluted, wantOther []string
	for key, v := range truth {
		if v == "" {
			wantPolluted = append(wantPolluted, key)
		} else {
			wantOther = append(wantOther, key+"="+v)
		}
	}
	if diff := cmp.Diff(sorted(wantPolluted), reportKeys(dry.Polluted(), "")); diff != "" {
		t.Errorf("the dry run's polluted objects differ from an unpaged wildcard LIST's (-LIST +dry run):\n%s", diff)
	}
	if diff := cmp.Diff([]string{scrubKey(planted) + "=v1"}, reportKeys(dry.OtherValues(), "value")); diff != "" || len(wantOther) != 1 {
		t.Errorf("objects with another value: LIST %v; dry run (-want +got):\n%s", wantOther, diff)
	}
	for _, ref := range seeded {
		if _, ok := truth[scrubKey(ref)]; !ok {
			t.Errorf("%s, polluted on the pristine build, does not carry the key after the upgrade", ref)
		}
	}
	if dry.ExitCode != scrub.ExitFound || dry.Totals.Scrubbed != 0 {
		t.Errorf("dry run: outcome %s (exit %d), %d scrubbed; want found, nothing written", dry.Outcome, dry.ExitCode, dry.Totals.Scrubbed)
	}
	t.Logf("dry run on the carried build: %d objects in %d resources scanned, %d polluted (%d seeded, %d the server's own), 1 other value, in %s",
		dry.Totals.Scanned, len(dry.Resources), dry.Totals.Polluted, len(seeded), dry.Totals.Polluted-len(seeded), dry.Elapsed.Round(time.Millisecond))

	before := readObjects(t, ctx, c.cfg, append(dry.Polluted(), dry.OtherValues()...))

	// --apply while 4 writers label the seeded objects; their ledger
	// (check (c)) proves that every acknowledged write survives.
	w := o
	w.Config, w.ServerExited = c.cfg, c.done
	w.NoSeed = true
	w.Listers, w.Watchers, w.MixedWatchers, w.Writers = 0, 0, 0, 4
	w.Duration = 30 * time.Second
	loadStarted := make(chan struct{})
	var once sync.Once
	var loadStart time.Time
	w.Logf = func(format string, args ...any) {
		t.Logf(format, args...)
		if fmt.Sprintf(format, args...) == "hammer: load" {
			once.Do(func() { loadStart = time.Now(); close(loadStarted) })
		}
	}
	var wrep *hammer.Report
	var wg sync.WaitGroup
	wg.Go(func() { wrep = runHammer(t, w) })
	hammerDone := make(chan struct{})
	go func() { wg.Wait(); close(hammerDone) }()
	select {
	case <-loadStarted:
	case <-hammerDone:
		t.Fatal("the writers ended before their load started")
	case <-time.After(2 * time.Minute):
		t.Fatal("the writers did not start")
	}
	time.Sleep(time.Second)
	applyOpts := scrub.Options{Apply: true, Force: !sc.carryStamped, QPS: 20, Burst: 5}
	applied := runScrub(t, ctx, bin, c.cfg, applyOpts)
	scrubDone := time.Now()
	wg.Wait()
	if applied.ExitCode != scrub.ExitScrubbed || applied.Totals.Failed != 0 {
		t.Errorf("--apply: outcome %s (exit %d), %d failed; want scrubbed", applied.Outcome, applied.ExitCode, applied.Totals.Failed)
	}
	if got, want := applied.Totals.Scrubbed+applied.Totals.AlreadyClean, len(wantPolluted); got != want {
		t.Errorf("--apply scrubbed %d (+%d already clean), want %d", applied.Totals.Scrubbed, applied.Totals.AlreadyClean, want)
	}
	if loadStart.Add(wrep.LoadElapsed).Before(scrubDone) || wrep.SuccessfulWrites == 0 {
		t.Errorf("the writers did not outlast the scrub (%d successful writes): the apply did not run under concurrent writes", wrep.SuccessfulWrites)
	}
	expectChecksHeld(t, wrep, checks.LostWrites)
	t.Logf("--apply under 4 writers: %d scrubbed, %d already clean, %d patches, in %s; writers: %d successful writes",
		applied.Totals.Scrubbed, applied.Totals.AlreadyClean, patches(applied), applied.Elapsed.Round(time.Millisecond), wrep.SuccessfulWrites)

	// Afterwards nothing carries "", the planted value is still there, and
	// every object is as it was except for that key (and the writers' label,
	// which check (c) judged).
	left := storedPolluted(t, ctx, c.cfg, resources)
	for key, v := range left {
		if v == "" {
			t.Errorf("%s still carries %s=\"\" after --apply", key, scrub.Annotation)
		}
	}
	if v := left[scrubKey(planted)]; v != "v1" {
		t.Errorf("the planted %s=v1 on %s is %q after --apply", scrub.Annotation, planted, v)
	}
	after := readObjects(t, ctx, c.cfg, append(dry.Polluted(), dry.OtherValues()...))
	ignore := cmp.Options{
		cmpopts.IgnoreMapEntries(func(k string, _ any) bool {
			return k == "resourceVersion" || k == "managedFields" || k == scrub.Annotation || k == hammer.GenLabel
		}),
	}
	for key, b := range before {
		a, ok := after[key]
		if !ok {
			t.Errorf("%s: gone after --apply", key)
			continue
		}
		if diff := cmp.Diff(b.Object, a.Object, ignore); diff != "" {
			t.Errorf("%s changed beyond %s (-before +after):\n%s", key, scrub.Annotation, diff)
		}
	}

	again := runScrub(t, ctx, bin, c.cfg, scrub.Options{})
	if again.ExitCode != scrub.ExitClean || again.Totals.Polluted != 0 || again.Totals.OtherValue != 1 {
		t.Errorf("second dry run: outcome %s (exit %d), %d polluted, %d other values; want clean, 0, 1", again.Outcome, again.ExitCode, again.Totals.Polluted, again.Totals.OtherValue)
	}
	if err := c.stop(); err != nil {
		t.Logf("stopping the carried build: %v", err)
	}
}

func scrubHammerOptions(t *testing.T, s scrubServer) hammer.Options {
	o := hammer.DefaultOptions()
	o.Config = s.cfg
	o.Clusters = s.clusters
	o.Objects = scrubObjects
	o.Prefix = "scrub-"
	o.ServerExited = s.done
	o.Logf = t.Logf
	return o
}

// runScrub runs `carry scrub --json` (cmd/carry, built by carryBinary) as an
// operator does, connected through kubectl's flags for cfg
// (connectionFlags): --server, --certificate-authority and the credentials,
// no kubeconfig. mode sets --apply, --force, --qps and --burst. The exit
// status must be the report's.
func runScrub(t *testing.T, ctx context.Context, bin string, cfg *rest.Config, mode scrub.Options) *scrub.Report {
	t.Helper()
	args := append([]string{"scrub", "--json"}, connectionFlags(t, cfg)...)
	if mode.Apply {
		args = append(args, "--apply")
	}
	if mode.Force {
		args = append(args, "--force")
	}
	if mode.QPS > 0 {
		args = append(args, "--qps", strconv.FormatFloat(float64(mode.QPS), 'f', -1, 32), "--burst", strconv.Itoa(mode.Burst))
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("carry %s: %v", strings.Join(redactToken(args), " "), err)
	}
	rep := new(scrub.Report)
	if jerr := json.Unmarshal(stdout.Bytes(), rep); jerr != nil {
		t.Fatalf("carry %s: exit status %d, no JSON report (%v)\nstderr:\n%s", strings.Join(redactToken(args), " "), cmd.ProcessState.ExitCode(), jerr, stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != rep.ExitCode {
		t.Errorf("carry %s: exit status %d, the report says %d (%s)", strings.Join(redactToken(args), " "), code, rep.ExitCode, rep.Outcome)
	}
	var text strings.Builder
	_ = rep.WriteText(&text, false)
	t.Logf("carry %s:\n%s", strings.Join(redactToken(args), " "), text.String())
	return rep
}

// carryBinary builds cmd/carry, the binary `make` installs as bin/carry and
// bin/kubectl-carry, into a directory of t's.
func carryBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "carry")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/carry")
	cmd.Dir = testfs.RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/carry: %v\n%s", err, out)
	}
	return bin
}

// connectionFlags are kubectl's connection flags for cfg, the way the
// harness's servers expose it (base URL, CA, shard admin credentials):
// --server, --certificate-authority, and --token or
// --client-certificate/--client-key, data written to files of t's.
func connectionFlags(t *testing.T, cfg *rest.Config) []string {
	t.Helper()
	dir := t.TempDir()
	file := func(name, path string, data []byte) string {
		if path != "" {
			return path
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if cfg.CAFile == "" && len(cfg.CAData) == 0 {
		t.Fatalf("the server's config at %s has no CA to pass as --certificate-authority", cfg.Host)
	}
	args := []string{"--server", cfg.Host, "--certificate-authority", file("ca.crt", cfg.CAFile, cfg.CAData)}
	switch {
	case cfg.BearerToken != "":
		args = append(args, "--token", cfg.BearerToken)
	case cfg.CertFile != "" || len(cfg.CertData) > 0:
		args = append(args, "--client-certificate", file("client.crt", cfg.CertFile, cfg.CertData), "--client-key", file("client.key", cfg.KeyFile, cfg.KeyData))
	}
	if cfg.BearerTokenFile != "" || cfg.Username != "" || cfg.ExecProvider != nil || cfg.AuthProvider != nil {
		t.Fatalf("the server's config at %s has credentials kubectl's flags cannot pass", cfg.Host)
	}
	return args
}

// redactToken is args with --token's value hidden, for logs.
func redactToken(args []string) []string {
	out := append([]string{}, args...)
	for i := range out {
		if out[i] == "--token" && i+1 < len(out) {
			out[i+1] = "<token>"
		}
	}
	return out
}

func seededRefs(o hammer.Options) []objectRef {
	var refs []objectRef
	for _, cluster := range o.Clusters {
		for _, r := range o.Resources {
			for i := range o.Objects {
				ref := objectRef{resource: r, cluster: cluster, name: fmt.Sprintf("%s%04d", o.Prefix, i)}
				if r.Namespaced {
					ref.namespace = o.Namespace
				}
				refs = append(refs, ref)
			}
		}
	}
	return refs
}

func scrubResources(o hammer.Options) []scrub.Resource {
	var out []scrub.Resource
	for _, r := range o.Resources {
		out = append(out, scrub.Resource{Group: r.Group, Version: r.Version, Resource: r.Resource, Namespaced: r.Namespaced})
	}
	return out
}

func scannedResources(rep *scrub.Report) []scrub.Resource {
	var out []scrub.Resource
	for _, r := range rep.Resources {
		out = append(out, r.Resource)
	}
	return out
}

// scrubKey is "<resource> cluster|namespace/name", as the scrub's report
// names objects.
func scrubKey(ref objectRef) string {
	r := scrub.Resource{Group: ref.resource.Group, Resource: ref.resource.Resource}
	o := scrub.ObjectReport{Cluster: ref.cluster, Namespace: ref.namespace, Name: ref.name}
	return r.String() + " " + o.Ref()
}

// reportKeys names the scrub's objects as scrubKey does, with "=value" when
// with is "value"; sorted.
func reportKeys(objs []*scrub.ObjectReport, with string) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Key())
		if with == "value" {
			out[len(out)-1] += "=" + o.Value
		}
	}
	return sorted(out)
}

func sorted(s []string) []string {
	s = append([]string{}, s...)
	sort.Strings(s)
	if len(s) == 0 {
		return nil
	}
	return s
}

// storedPolluted reads every object of resources from etcd with one
// unpaged wildcard LIST each (not the scrub's code) and returns those that
// carry the annotation, with its value, by scrubKey.
func storedPolluted(t *testing.T, ctx context.Context, cfg *rest.Config, resources []scrub.Resource) map[string]string {
	t.Helper()
	dc := clusterDynamic(t, cfg, "*")
	out := map[string]string{}
	for _, r := range resources {
		list, err := dc.Resource(r.GVR()).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("wildcard LIST of %s: %v", r, err)
		}
		for _, item := range list.Items {
			v, ok := item.GetAnnotations()[scrub.Annotation]
			if !ok {
				continue
			}
			o := scrub.ObjectReport{Cluster: logicalcluster.From(&item).String(), Namespace: item.GetNamespace(), Name: item.GetName()}
			out[r.String()+" "+o.Ref()] = v
		}
	}
	return out
}

// readObjects GETs each object from etcd in its own cluster, by key.
func readObjects(t *testing.T, ctx context.Context, cfg *rest.Config, objs []*scrub.ObjectReport) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		got, err := clusterDynamic(t, cfg, o.Cluster).Resource(o.APIResource().GVR()).Namespace(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("GET %s: %v", o.Key(), err)
		}
		out[o.Key()] = got
	}
	return out
}

// plant creates a ConfigMap that carries the annotation with a value of
// its own: the scrub must report it and leave it alone.
func plant(t *testing.T, ctx context.Context, cfg *rest.Config, ref objectRef, value string) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": ref.name, "namespace": ref.namespace,
			"annotations": map[string]any{scrub.Annotation: value}},
		"data": map[string]any{"why": "a value of the annotation someone set on purpose"},
	}}
	if _, err := clusterDynamic(t, cfg, ref.cluster).Resource(gvrOf(ref.resource)).Namespace(ref.namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s: %v", ref, err)
	}
}

func clusterDynamic(t *testing.T, cfg *rest.Config, cluster string) *dynamic.DynamicClient {
	t.Helper()
	c := rest.CopyConfig(cfg)
	c.Host = strings.TrimSuffix(c.Host, "/") + "/clusters/" + cluster
	dc, err := dynamic.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

func patches(rep *scrub.Report) int {
	n := 0
	for _, o := range rep.Polluted() {
		n += o.Attempts
	}
	return n
}
