package scrub

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/kcp-carry/kcp-carry/internal/testapiserver"
)

const carryVersion = "v1.36.0+kcp-v0.32.3-carry-0123456789"

// fixture objects: two carry "", one another value, one none.
func newFake(gitVersion string) *testapiserver.Server {
	return testapiserver.New(gitVersion,
		&testapiserver.Object{Cluster: "root", Namespace: "default", Name: "a", Annotations: map[string]string{Annotation: "", "keep": "me"}},
		&testapiserver.Object{Cluster: "root", Namespace: "default", Name: "b", Annotations: map[string]string{Annotation: "v1"}},
		&testapiserver.Object{Cluster: "2xk9", Namespace: "team", Name: "c", Annotations: map[string]string{Annotation: ""}},
		&testapiserver.Object{Cluster: "2xk9", Namespace: "team", Name: "d"},
	)
}

func run(t *testing.T, s *testapiserver.Server, mutate func(*Options)) (*Report, error) {
	t.Helper()
	t.Cleanup(s.Close)
	o := DefaultOptions()
	o.Config = &rest.Config{Host: s.URL + "/clusters/root", BearerToken: "fake-admin", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	o.QPS, o.Burst = 1000, 1000
	if mutate != nil {
		mutate(&o)
	}
	return Run(context.Background(), o)
}

func keys(objs []*ObjectReport) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Key()+" "+string(o.Outcome))
	}
	return out
}

func TestDryRunSelectsOnlyTheEmptyValue(t *testing.T) {
	s := newFake(carryVersion)
	rep, err := run(t, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"configmaps 2xk9|team/c polluted", "configmaps root|default/a polluted"}, keys(rep.Polluted())); diff != "" {
		t.Errorf("polluted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"configmaps root|default/b other-value"}, keys(rep.OtherValues())); diff != "" {
		t.Errorf("other values (-want +got):\n%s", diff)
	}
	if rep.ExitCode != ExitFound || s.Patches != 0 || !rep.CarryBuild || rep.CarryID != "0123456789" {
		t.Errorf("dry run: exit %d, %d patches, carry build %t %q; want %d, 0, true", rep.ExitCode, s.Patches, rep.CarryBuild, rep.CarryID, ExitFound)
	}
	// Read back from --json, the report names the same objects, each with
	// its resource.
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(keys(rep.Polluted()), keys(back.Polluted())); diff != "" {
		t.Errorf("polluted after a JSON round trip (-before +after):\n%s", diff)
	}
	for _, o := range back.Polluted() {
		if got := o.APIResource().GVR().String(); got != "/v1, Resource=configmaps" {
			t.Errorf("%s after a JSON round trip: resource %q", o.Key(), got)
		}
	}
	var scanned []string
	for _, r := range rep.Resources {
		scanned = append(scanned, r.String())
	}
	if diff := cmp.Diff([]string{"configmaps", "customresourcedefinitions.apiextensions.k8s.io"}, scanned); diff != "" {
		t.Errorf("scanned resources (-want +got):\n%s", diff)
	}
	excluded := map[string]string{}
	for _, e := range rep.Excluded {
		excluded[e.Resource] = e.Reason
	}
	if !strings.Contains(excluded["widgets.example.kcp.io"], "CustomResourceDefinition") || !strings.Contains(excluded["componentstatuses"], "patch") {
		t.Errorf("excluded = %v; want widgets (a CRD's group) and componentstatuses (no patch)", excluded)
	}
	var text strings.Builder
	if err := rep.WriteText(&text, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"polluted: configmaps 2xk9|team/c", `left alone: configmaps root|default/b carries kcp.io/original-api-version="v1"`, "found: 2 objects"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

func TestApplyRemovesOnlyTheKeyAndNeverAConcurrentValue(t *testing.T) {
	s := newFake(carryVersion)
	// Someone writes their own value on c just before its patch arrives.
	s.BeforePatch = func(o *testapiserver.Object) {
		if o.Name == "c" {
			o.Annotations[Annotation] = "mine"
		}
	}
	rep, err := run(t, s, func(o *Options) { o.Apply = true })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"keep": "me"}, s.Object("root", "default", "a").Annotations); diff != "" {
		t.Errorf("a after the scrub (-want +got):\n%s", diff)
	}
	if v := s.Object("2xk9", "team", "c").Annotations[Annotation]; v != "mine" {
		t.Errorf("c's concurrent value was undone: %q", v)
	}
	if diff := cmp.Diff([]string{"configmaps 2xk9|team/c other-value", "configmaps root|default/a scrubbed"}, keys(rep.Polluted())); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if rep.ExitCode != ExitScrubbed || rep.Totals.Scrubbed != 1 || rep.Totals.OtherValue != 2 || s.Patches != 2 {
		t.Errorf("apply: exit %d, totals %+v, %d patches; want %d, 1 scrubbed, 2 other values, 2 patches", rep.ExitCode, rep.Totals, s.Patches, ExitScrubbed)
	}

	// Nothing is left: a second run is clean.
	again, err := run(t, s, nil)
	if err != nil || again.ExitCode != ExitClean {
		t.Errorf("second run: %v, exit %d; want clean", err, again.ExitCode)
	}
}

func TestApplyRefusesAServerThatIsNotACarryBuild(t *testing.T) {
	for _, gv := range []string{"v1.36.0+kcp-v0.32.3", "v1.36.0+kcp-v0.32.3-pristine"} {
		s := newFake(gv)
		rep, err := run(t, s, func(o *Options) { o.Apply = true })
		if err != nil {
			t.Fatal(err)
		}
		if rep.ExitCode != ExitRefused || s.Patches != 0 || !strings.Contains(rep.Refused, "not a carry build") || !strings.Contains(rep.Refused, "--force") {
			t.Errorf("%s: exit %d, %d patches, refused %q; want refused, nothing written, --force named", gv, rep.ExitCode, s.Patches, rep.Refused)
		}
		forced, err := run(t, s, func(o *Options) { o.Apply, o.Force = true, true })
		if err != nil || forced.ExitCode != ExitScrubbed || forced.Totals.Scrubbed != 2 {
			t.Errorf("%s with --force: %v, exit %d, %d scrubbed; want 2 scrubbed", gv, err, forced.ExitCode, forced.Totals.Scrubbed)
		}
	}
}

func TestWildcardForbiddenNamesTheScope(t *testing.T) {
	s := newFake(carryVersion)
	s.ForbidWildcard = true
	_, err := run(t, s, nil)
	if !errors.Is(err, ErrWildcardForbidden) || !strings.Contains(err.Error(), "/clusters/*/api/v1/configmaps") || !strings.Contains(err.Error(), "shard-base") {
		t.Errorf("error = %v; want ErrWildcardForbidden naming the LIST and shard-base", err)
	}
	// Through workspaces, the same credentials work.
	s2 := newFake(carryVersion)
	s2.ForbidWildcard = true
	rep, err := run(t, s2, func(o *Options) { o.Workspaces = []string{"root"}; o.Resources = []string{"configmaps"} })
	if err != nil || rep.Totals.Polluted != 1 {
		t.Errorf("--workspaces root: %v, %+v; want 1 polluted", err, rep)
	}
}

func TestPatchFailuresAreCountedWithReasons(t *testing.T) {
	tests := []struct {
		status  int
		patches int
		reason  string
	}{
		{405, 2, "cannot be patched"},
		{409, 2 * 3, `still "" after 3 patches`},
	}
	for _, tt := range tests {
		s := newFake(carryVersion)
		s.PatchStatus = tt.status
		rep, err := run(t, s, func(o *Options) { o.Apply, o.MaxAttempts = true, 3 })
		if err != nil {
			t.Fatal(err)
		}
		if rep.ExitCode != ExitPartial || rep.Totals.Failed != 2 || s.Patches != tt.patches {
			t.Errorf("PATCH answered %d: exit %d, %d failed, %d patches; want %d, 2, %d", tt.status, rep.ExitCode, rep.Totals.Failed, s.Patches, ExitPartial, tt.patches)
		}
		for _, o := range rep.Polluted() {
			if !strings.Contains(o.Reason, tt.reason) || !strings.Contains(o.Reason, o.Ref()) && tt.status == 405 {
				t.Errorf("PATCH answered %d: %s failed with %q, want %q", tt.status, o.Ref(), o.Reason, tt.reason)
			}
		}
	}
}

func TestResourcesFlagRefusesWhatCannotBeScrubbed(t *testing.T) {
	for name, want := range map[string]string{
		"widgets":                "--resources: widgets.example.kcp.io served by a CustomResourceDefinition",
		"componentstatuses":      "--resources: componentstatuses does not support patch",
		"secrets":                `--resources: the server does not serve "secrets"`,
		"configmaps,nonexistent": `--resources: the server does not serve "nonexistent"`,
	} {
		_, err := run(t, newFake(carryVersion), func(o *Options) { o.Resources = strings.Split(name, ",") })
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--resources %s: %v; want %q", name, err, want)
		}
	}
}

func TestBadOptionsNameTheFlag(t *testing.T) {
	_, err := run(t, newFake(carryVersion), func(o *Options) { o.PageSize, o.QPS, o.Workspaces = 0, -1, []string{"a/b"} })
	for _, want := range []string{"--page-size", "--qps", `--workspaces: "a/b"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

func TestProgressNamesEachResourceAndTicks(t *testing.T) {
	s := newFake(carryVersion)
	// Slow patches, so that the periodic line comes while the apply runs.
	s.BeforePatch = func(*testapiserver.Object) { time.Sleep(30 * time.Millisecond) }
	var progress strings.Builder
	var mu sync.Mutex
	_, err := run(t, s, func(o *Options) {
		o.Apply, o.ProgressEvery = true, 10*time.Millisecond
		o.Progress = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return progress.Write(p) })
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"scrub: configmaps: 4 scanned, 2 polluted, 2 scrubbed, 0 failed", "scanned, 2 polluted,", "(at configmaps)"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
