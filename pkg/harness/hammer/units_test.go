package hammer

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
)

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.99, 990 * time.Millisecond}, {1, time.Second}} {
		got := h.quantile(tc.q)
		if diff := float64(got-tc.want) / float64(tc.want); diff < 0 || diff > 0.012 {
			t.Errorf("quantile(%v) = %s, want %s within +1.2%%", tc.q, got, tc.want)
		}
	}
	var empty histogram
	if empty.quantile(0.5) != 0 {
		t.Error("empty histogram quantile != 0")
	}
	var one histogram
	one.add(300 * time.Nanosecond)
	if got := one.quantile(0.99); got != 300*time.Nanosecond {
		t.Errorf("single sub-µs sample: p99 = %s", got)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want ErrorClass
	}{
		{nil, ClassOK},
		{&StatusError{Code: 409}, ClassConflict},
		{&StatusError{Code: 404}, Class4xx},
		{&StatusError{Code: 503}, Class5xx},
		{fmt.Errorf("wrapped: %w", &StatusError{Code: 500}), Class5xx},
		{&ProtocolError{Msg: "x"}, ClassProtocol},
		{&url.Error{Op: "Get", URL: "u", Err: errors.New("connection refused")}, ClassTransport},
		{io.ErrUnexpectedEOF, ClassTransport},
	} {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

// TestJudgeWildcardItem is the contract for one wildcard partial item: a
// custom resource carries its own apiVersion, a typed object no key, and
// nothing carries "".
func TestJudgeWildcardItem(t *testing.T) {
	value := func(s string) *string { return &s }
	for _, tc := range []struct {
		res  Resource
		got  *string
		want bool
	}{
		{ClusterRoles, nil, true},
		{ClusterRoles, value(""), false},
		{ClusterRoles, value("rbac.authorization.k8s.io/v1"), false},
		{ConfigMaps, nil, true},
		{APIExports, value("apis.kcp.io/v1alpha2"), true},
		{APIExports, value(""), false},
		{APIExports, value("apis.kcp.io/v1alpha1"), false},
		{APIExports, nil, false},
	} {
		shown, want, ok := tc.res.originalAPIVersion().Judge(tc.got)
		if ok != tc.want {
			t.Errorf("%s with %s (want %s): ok = %v, want %v", tc.res.Resource, shown, want, ok, tc.want)
		}
	}
}

func TestParseResource(t *testing.T) {
	for in, want := range map[string]Resource{
		"clusterroles": ClusterRoles, "rbac.authorization.k8s.io/v1/clusterroles": ClusterRoles,
		"configmaps": ConfigMaps, "v1/configmaps": ConfigMaps,
	} {
		if got, err := ParseResource(in); err != nil || got != want {
			t.Errorf("ParseResource(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"secrets", "apps/v1/configmaps", ""} {
		if _, err := ParseResource(bad); err == nil {
			t.Errorf("ParseResource(%q) accepted", bad)
		}
	}
	if got := ClusterRoles.collectionPath("*", ""); got != "/clusters/*/apis/rbac.authorization.k8s.io/v1/clusterroles" {
		t.Errorf("clusterroles path = %s", got)
	}
	if got := ConfigMaps.objectPath("root", "default", "x"); got != "/clusters/root/api/v1/namespaces/default/configmaps/x" {
		t.Errorf("configmap path = %s", got)
	}
}

func TestListerShapes(t *testing.T) {
	got, err := ParseListerShapes("kcp:0, v1beta1:,v1:0:paged")
	if err != nil {
		t.Fatal(err)
	}
	want := []requestshape.Shape{
		{Verb: requestshape.List, Scope: requestshape.Wildcard, Accept: requestshape.PartialV1, ResourceVersion: "0", KCPMetadataClient: true},
		{Verb: requestshape.List, Scope: requestshape.Wildcard, Accept: requestshape.PartialV1beta1},
		{Verb: requestshape.List, Scope: requestshape.Wildcard, Accept: requestshape.PartialV1, ResourceVersion: "0", Paged: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lister shapes (-want +got):\n%s", diff)
	}
	for bad, why := range map[string]string{
		"v2:0":           `accept "v2"`,
		"v1:5":           `resourceVersion "5"`,
		"v1:0:pages":     `"pages" is not paged or a selector`,
		"kcp":            "no <accept>:<rv>",
		"v1:0:paged:x":   `"x" is not paged or a selector`,
		"json:0":         "",
		"json::paged":    "",
		"protobuf:0":     "not a lister's",
		"table:0":        "not a lister's",
		"watch:v1:0":     "not a lister's",
		"cluster:v1:0":   "--scope says where it goes",
		"v1:0:label":     "not a lister's",
		"kcp:0:paged":    "",
		"v1beta1::paged": "",
	} {
		_, err := ParseListerShape(bad)
		if (why == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), why)) {
			t.Errorf("ParseListerShape(%q) = %v, want an error saying %q", bad, err, why)
		}
	}
	d := ListerShapes(nil, 9)
	var names []string
	for _, s := range d {
		names = append(names, s.Name())
	}
	// The mix of every evidence run so far, in its order.
	if got, want := strings.Join(names, " "), "kcp:0 v1beta1: v1:0 v1beta1:0:paged v1: v1beta1:0 v1::paged kcp: kcp:0"; got != want {
		t.Errorf("default listers %s, want %s", got, want)
	}
	if got := ListerShapes(want[1:2], 2); got[0] != want[1] || got[1] != want[1] {
		t.Errorf("given shapes are not cycled: %v", got)
	}
	for i, want := range []string{`list kcp-client rv=0`, `list v1beta1 rv=""`, `list v1 rv=0`, `list v1beta1 rv=0 paged`} {
		if got := (listerShape{d[i]}).opName(); got != want {
			t.Errorf("operation of %s = %q, want %q", d[i], got, want)
		}
	}
	if got := (listerShape{requestshape.MustParse("json::paged")}).opName(); got != `list json rv="" paged` {
		t.Errorf("operation of json::paged = %q", got)
	}
}

func TestBaseConfig(t *testing.T) {
	for in, want := range map[string]string{
		"https://127.0.0.1:6443":                    "https://127.0.0.1:6443",
		"https://127.0.0.1:6443/clusters/root":      "https://127.0.0.1:6443",
		"https://127.0.0.1:6443/clusters/root:org/": "https://127.0.0.1:6443",
		"https://proxy:443/prefix/clusters/*":       "https://proxy:443/prefix",
		"127.0.0.1:6443":                            "https://127.0.0.1:6443",
	} {
		c, err := BaseConfig(&rest.Config{Host: in, QPS: 5})
		if err != nil || c.Host != want || c.QPS >= 0 {
			t.Errorf("BaseConfig(%q) = %v (QPS %v), %v; want %q and no client-side rate limit", in, c.Host, c.QPS, err, want)
		}
	}
	if _, err := BaseConfig(&rest.Config{}); err == nil {
		t.Error("BaseConfig accepted an empty host")
	}
}

// TestReportNeverCleanWhenNothingWasChecked: a run where an enabled check
// did not run or saw no item, or where no check was enabled at all, proves
// nothing and is not "clean".
func TestReportNeverCleanWhenNothingWasChecked(t *testing.T) {
	held := func(n int64) checks.Result { return checks.Result{Enabled: true, Ran: true, Checked: n} }
	for name, tc := range map[string]struct {
		checks []checks.Result
		want   int
	}{
		"every enabled check held on items": {
			checks: []checks.Result{held(10), held(3), held(3), {Note: "no --mixed-watchers"}},
			want:   ExitClean,
		},
		"an enabled check ran on no item": {
			checks: []checks.Result{held(10), held(0), {}, {}},
			want:   ExitFailure,
		},
		"an enabled check did not run": {
			checks: []checks.Result{held(10), {Enabled: true, Note: "skipped"}, {}, {}},
			want:   ExitFailure,
		},
		"no check enabled": {
			checks: []checks.Result{{}, {}, {}, {}},
			want:   ExitFailure,
		},
		"no check in the report": {
			want: ExitFailure,
		},
		"a violation still wins": {
			checks: []checks.Result{{Enabled: true, Ran: true, Checked: 10, Violations: 1}, held(0), {}, {}},
			want:   ExitViolated,
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := &Report{Checks: tc.checks}
			r.finish()
			if r.ExitCode != tc.want {
				t.Errorf("verdict %q (exit %d), want exit %d", r.Verdict, r.ExitCode, tc.want)
			}
		})
	}
}

// TestReportResult: a report finds a check's result by name, and a check
// missing from it comes back as not run, with a note.
func TestReportResult(t *testing.T) {
	r := &Report{Checks: []checks.Result{{ID: "b", Name: checks.Pollution, Ran: true, Checked: 4}}}
	if c := r.Result(checks.Pollution); !c.Ran || c.Checked != 4 || c.Title() != "b: "+checks.Pollution {
		t.Errorf("Result(%q) = %+v", checks.Pollution, c)
	}
	if c := r.Result(checks.LostWrites); c.Ran || c.Violated() || c.Note == "" {
		t.Errorf("Result of a check missing from the report = %+v, want not run with a note", c)
	}
}

// TestEnabledCheckThatSawNothing: a check that applies to the run but saw no
// item ran on nothing (not "not run"), so the run cannot be clean.
func TestEnabledCheckThatSawNothing(t *testing.T) {
	o := DefaultOptions()
	o.MixedWatchers = 1
	obs := observationsOf(&o)
	obs.Loaded, obs.Writes, obs.ReadBack = true, checks.NewLedger(GenLabel), &checks.ReadBack{}
	for _, c := range checks.New() {
		res := c.Result(obs)
		if !res.Enabled || !res.Ran || res.Checked != 0 || res.Note == "" {
			t.Errorf("check %s = %+v, want enabled, ran on nothing, with a note", c.Info().ID, res)
		}
	}
	var rep Report
	for _, c := range checks.New() {
		rep.Checks = append(rep.Checks, c.Result(obs))
	}
	rep.finish()
	if rep.ExitCode != ExitFailure || rep.Verdict != "nothing checked" {
		t.Errorf("verdict %q (exit %d), want nothing checked (exit %d)", rep.Verdict, rep.ExitCode, ExitFailure)
	}

	// Checks that do not apply say why and stay out of the verdict.
	o.Scope, o.MixedWatchers, o.Writers = ScopeCluster, 0, 0
	o.NoAfterChecks = true
	obs = observationsOf(&o)
	obs.Loaded, obs.Writes, obs.ReadBackSkipped = true, checks.NewLedger(GenLabel), "--no-after-checks"
	for _, c := range checks.New() {
		if res := c.Result(obs); res.Enabled || res.Ran || res.Note == "" {
			t.Errorf("check %s = %+v, want not enabled, with a note", c.Info().ID, res)
		}
	}
}
