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
		"json:0":         "not a lister's",
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

func TestLedger(t *testing.T) {
	l := newLedger()
	k := ObjectKey{Resource: "configmaps", Cluster: "a", Name: "x"}
	l.baseline(k, "seed")
	if ok, _, known, _ := l.verdict(k, "seed"); !ok || !known {
		t.Error("baseline not accepted")
	}
	l.succeeded(k, "w0-1")
	l.unknown(k, "w0-2")
	if ok, unc, _, _ := l.verdict(k, "w0-2"); !ok || !unc {
		t.Error("a write of unknown outcome must be accepted as uncertain")
	}
	if ok, _, _, want := l.verdict(k, "seed"); ok || want != "w0-1" {
		t.Errorf("lost write accepted, want %q", want)
	}
	l.baseline(k, "later") // ignored after writes
	if _, _, _, want := l.verdict(k, ""); want != "w0-1" {
		t.Errorf("baseline after writes overwrote the ledger: %q", want)
	}
	if _, _, known, _ := l.verdict(ObjectKey{Name: "other"}, ""); known {
		t.Error("unknown object reported known")
	}
}

// TestReportNeverCleanWhenNothingWasChecked: a run whose checks ran but saw
// no item, or where no check ran at all, proves nothing and is not "clean".
func TestReportNeverCleanWhenNothingWasChecked(t *testing.T) {
	for name, tc := range map[string]struct {
		checks [4]CheckResult
		want   int
	}{
		"every check held on items": {
			checks: [4]CheckResult{{Ran: true, Checked: 10}, {Ran: true, Checked: 3}, {Ran: true, Checked: 3}, {}},
			want:   ExitClean,
		},
		"a check ran on no item": {
			checks: [4]CheckResult{{Ran: true, Checked: 10}, {Ran: true, Checked: 0}, {}, {}},
			want:   ExitFailure,
		},
		"no check ran": {
			want: ExitFailure,
		},
		"a violation still wins": {
			checks: [4]CheckResult{{Ran: true, Checked: 10, Violations: 1}, {Ran: true}, {}, {}},
			want:   ExitViolated,
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := &Report{APIVersion: tc.checks[0], Pollution: tc.checks[1], Lost: tc.checks[2], Mixed: tc.checks[3]}
			r.finish()
			if r.ExitCode != tc.want {
				t.Errorf("verdict %q (exit %d), want exit %d", r.Verdict, r.ExitCode, tc.want)
			}
		})
	}
}
