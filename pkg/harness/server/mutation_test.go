package server

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
)

// The reports as client-go's detector prints them (its format, with
// apimachinery's side-by-side dump of the object now and when stored),
// between kcp's log lines.
func TestParseCacheMutations(t *testing.T) {
	// One annotation at most: the dump prints a map's entries in no fixed order.
	stored := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:admin"}}
	now := stored.DeepCopy()
	now.Annotations = map[string]string{"kcp.io/original-api-version": ""}
	other := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "view", Labels: map[string]string{"x": "1"}}}
	otherNow := other.DeepCopy()
	otherNow.Labels["x"] = "2"
	out := strings.Join([]string{
		`I1203 17:00:00.000000   12345 controller.go:42] "started"`,
		fmt.Sprintf("CACHE storage/cacher.go:/clusterroles[3] ALTERED!\n%v", diff.ObjectGoPrintSideBySide(now, stored)),
		fmt.Sprintf("CACHE storage/cacher.go:/clusterroles[7] ALTERED!\n%v", diff.ObjectGoPrintSideBySide(otherNow, other)),
		`E1203 17:00:01.000000   12345 other.go:1] "unrelated"`,
		"panic: cache storage/cacher.go:/clusterroles modified",
		"",
		"goroutine 1 [running]:",
	}, "\n")
	got := ParseCacheMutations(out)
	want := CacheMutations{
		Panic: "cache storage/cacher.go:/clusterroles modified",
		Reports: []CacheMutation{
			{Cache: "storage/cacher.go:/clusterroles", Index: 3, Object: "system:admin",
				Now:    []string{"Annotations: (map[string]string) (len=1) {", `(string) (len=27) "kcp.io/original-api-version": (string) ""`, "},"},
				Stored: []string{"Annotations: (map[string]string) <nil>,"}},
			{Cache: "storage/cacher.go:/clusterroles", Index: 7, Object: "view",
				Now:    []string{`(string) (len=1) "x": (string) (len=1) "2"`},
				Stored: []string{`(string) (len=1) "x": (string) (len=1) "1"`}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ParseCacheMutations (-want +got):\n%s\nfrom:\n%s", diff, out)
	}
	if got := ParseCacheMutations("I1203 ok\nW1203 also ok\n"); got.Panic != "" || len(got.Reports) != 0 {
		t.Errorf("a log with no report: %+v", got)
	}

	// kcp's log lines can land inside a dump, between two rows or in the
	// middle of one (the detector's one write reached the output in
	// pieces): the report reads as without them.
	dump := diff.ObjectGoPrintSideBySide(now, stored)
	row := strings.Index(dump, `"kcp.io/original-api-version"`)
	logs := `I1203 17:00:00.100000   12345 httplog.go:92] "GET" verb="LIST"` + "\n" + `E1203 17:00:00.200000   12345 other.go:1] "unrelated"` + "\n"
	for name, spliced := range map[string]string{
		"mid-row":      dump[:row] + logs + dump[row:],
		"between rows": dump[:strings.LastIndex(dump[:row], "\n")+1] + logs + dump[strings.LastIndex(dump[:row], "\n")+1:],
		"twice":        dump[:row] + logs + dump[row:row+5] + logs + dump[row+5:],
	} {
		out := "CACHE storage/cacher.go:/clusterroles[3] ALTERED!\n" + spliced + "\n"
		got := ParseCacheMutations(out)
		if diff := cmp.Diff(want.Reports[:1], got.Reports); diff != "" {
			t.Errorf("%s: (-want +got):\n%s\nfrom:\n%s", name, diff, out)
		}
	}
}

// The switch as client-go reads it, and the detectors a process says it made.
func TestCacheMutationDetectorOn(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want bool
	}{
		{[]string{"A=1", CacheMutationDetectorOn}, true},
		{[]string{"KUBE_CACHE_MUTATION_DETECTOR=1"}, true},
		{[]string{CacheMutationDetectorOn, CacheMutationDetectorOff}, false},
		{[]string{"KUBE_CACHE_MUTATION_DETECTOR=yes"}, false}, // strconv.ParseBool refuses it, as client-go does
		{[]string{"A=1"}, false},
	} {
		s := &Server{opts: Command{Env: tt.env}}
		if got := s.CacheMutationDetectorOn(); got != tt.want {
			t.Errorf("env %q: CacheMutationDetectorOn() = %v, want %v", tt.env, got, tt.want)
		}
	}
	out := "W1203 17:25:01.000000   11692 mutation_detector.go:54] Mutation detector is enabled, this will result in memory leakage.\n" +
		"I1203 17:25:01.100000   11692 other.go:1] \"x\"\n" +
		"W1203 17:25:01.200000   11692 mutation_detector.go:54] Mutation detector is enabled, this will result in memory leakage.\n"
	if got := CacheMutationDetectorsMade(out); got != 2 {
		t.Errorf("CacheMutationDetectorsMade = %d, want 2", got)
	}
}

// ReadUsage of this process: some memory, at most its peak, and CPU time that grows while
// it spins (bounded: at most 30 s of wall time on a loaded machine).
func TestReadUsage(t *testing.T) {
	before, err := ReadUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	after := before
	for deadline := time.Now().Add(30 * time.Second); after.CPU-before.CPU < 50*time.Millisecond && time.Now().Before(deadline); {
		for n := 0; n < 100000; n++ {
			_ = fmt.Sprint(n)
		}
		if after, err = ReadUsage(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	if after.PeakRSSKiB <= 0 || after.RSSKiB <= 0 || after.RSSKiB > after.PeakRSSKiB || after.CPU-before.CPU < 50*time.Millisecond {
		t.Errorf("ReadUsage = %+v after %+v and a busy loop", after, before)
	}
	if _, err := ReadUsage(-1); err == nil {
		t.Error("ReadUsage(-1): no error")
	}
}
