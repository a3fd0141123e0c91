package hammer

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"testing"
	"time"

	"k8s.io/client-go/rest"
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

func TestListerVariants(t *testing.T) {
	vs, err := ParseListerVariants("kcp:0, v1beta1:,v1:0:paged")
	if err != nil {
		t.Fatal(err)
	}
	want := []ListerVariant{{MetaVersion: "v1", ResourceVersion: "0", KCPMetadataClient: true}, {MetaVersion: "v1beta1"}, {MetaVersion: "v1", ResourceVersion: "0", Paged: true}}
	for i := range want {
		if vs[i] != want[i] {
			t.Errorf("variant %d = %+v, want %+v", i, vs[i], want[i])
		}
		if back, _ := ParseListerVariant(vs[i].Name()); back != vs[i] {
			t.Errorf("variant %s does not round-trip", vs[i].Name())
		}
	}
	for _, bad := range []string{"v2:0", "v1:5", "v1:0:pages", "kcp", "v1:0:paged:x"} {
		if _, err := ParseListerVariant(bad); err == nil {
			t.Errorf("ParseListerVariant(%q) accepted", bad)
		}
	}
	d := DefaultListerVariants(8)
	kcp, v1beta1, rv0, rvEmpty, paged := 0, 0, 0, 0, 0
	for _, v := range d {
		if v.KCPMetadataClient {
			kcp++
		}
		if v.MetaVersion == "v1beta1" {
			v1beta1++
		}
		if v.ResourceVersion == "0" {
			rv0++
		} else {
			rvEmpty++
		}
		if v.Paged {
			paged++
		}
	}
	if !d[0].KCPMetadataClient || kcp == 0 || v1beta1 == 0 || rv0 == 0 || rvEmpty == 0 || paged == 0 {
		t.Errorf("default variants %+v do not cover the matrix", d)
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
