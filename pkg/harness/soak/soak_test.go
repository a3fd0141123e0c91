package soak

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// fakeMetrics is a scrape as kcp's /metrics writes it (a few lines of each
// family the sampler reads).
const fakeMetrics = `# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 5.5e+08
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 3.0e+08
# TYPE go_memstats_heap_objects gauge
go_memstats_heap_objects 2.5e+06
# TYPE go_goroutines gauge
go_goroutines 1234
# TYPE etcd_mvcc_db_total_size_in_bytes gauge
etcd_mvcc_db_total_size_in_bytes 2.097152e+07
# TYPE etcd_debugging_mvcc_current_revision gauge
etcd_debugging_mvcc_current_revision 98765
# TYPE watch_cache_capacity gauge
watch_cache_capacity{group="rbac.authorization.k8s.io",resource="clusterroles"} 1024
watch_cache_capacity{group="",resource="configmaps"} 100
# TYPE apiserver_watch_cache_events_received_total counter
apiserver_watch_cache_events_received_total{group="rbac.authorization.k8s.io",resource="clusterroles"} 5000
# TYPE apiserver_storage_objects gauge
apiserver_storage_objects{resource="clusterroles.rbac.authorization.k8s.io"} 170
`

func TestSampleOf(t *testing.T) {
	m, err := server.ParseMetrics(fakeMetrics)
	if err != nil {
		t.Fatal(err)
	}
	s, err := SampleOf(m, 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := Sample{At: 90 * time.Second, RSSBytes: 5.5e8, HeapInuseBytes: 3e8, HeapObjects: 2.5e6, Goroutines: 1234,
		EtcdDBBytes: 20 << 20, EtcdRevision: 98765, WatchCacheCapacity: 1124, WatchCacheEvents: 5000, StorageObjects: 170}
	if s != want {
		t.Errorf("sample %+v, want %+v", s, want)
	}
	// etcd's and the watch cache's metrics are optional; the process's are not.
	m, _ = server.ParseMetrics(strings.Split(fakeMetrics, "# TYPE etcd_mvcc")[0])
	if s, err := SampleOf(m, 0); err != nil || s.EtcdDBBytes != 0 || Has(m, metricEtcdDB) {
		t.Errorf("without etcd's metrics: %+v, %v", s, err)
	}
	m, _ = server.ParseMetrics(strings.Replace(fakeMetrics, "go_memstats_heap_objects", "go_memstats_other", -1))
	if _, err := SampleOf(m, 0); err == nil || !strings.Contains(err.Error(), "go_memstats_heap_objects") {
		t.Errorf("without heap objects: %v, want an error naming them", err)
	}
}

// TestEtcdMetrics: the etcd listener's scrape adds only its etcd_* samples
// (its go_* and process_* are kcp's process again).
func TestEtcdMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, "# TYPE go_goroutines gauge\ngo_goroutines 7\n# TYPE etcd_debugging_mvcc_compact_revision gauge\netcd_debugging_mvcc_compact_revision 500\n")
	}))
	defer srv.Close()
	e, err := scrape(context.Background(), srv.URL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	kcp, _ := server.ParseMetrics(fakeMetrics)
	s, err := SampleOf(append(kcp, EtcdMetrics(e)...), 0)
	if err != nil || s.EtcdCompactRevision != 500 || s.Goroutines != 1234 {
		t.Errorf("sample %+v, %v: want compacted to 500, kcp's 1234 goroutines", s, err)
	}
	if _, err := scrape(context.Background(), srv.URL+"/nope"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("scrape of a 404 = %v", err)
	}
}

func TestParseProcStatus(t *testing.T) {
	st := parseProcStatus("Name:\tkcp\nVmRSS:\t  700000 kB\nRssAnon:\t  500000 kB\nRssFile:\t  199000 kB\nThreads:\t42\n")
	if st["RssAnon"] != 500000<<10 || st["RssFile"] != 199000<<10 || st["VmRSS"] != 700000<<10 || len(st) != 3 {
		t.Errorf("parsed %v", st)
	}
	if st, err := ProcStatus(os.Getpid()); err != nil || st["VmRSS"] == 0 {
		t.Errorf("this process: %v, %v", st, err)
	}
}

func TestFindEtcdDB(t *testing.T) {
	root := t.TempDir()
	if _, err := FindEtcdDB(root); err == nil {
		t.Error("found a db in an empty directory")
	}
	want := filepath.Join(root, ".etcd", "member", "snap", "db")
	if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".etcd", "member", "db"), nil, 0o644); err != nil { // not the one
		t.Fatal(err)
	}
	if err := os.WriteFile(want, []byte("bbolt"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := FindEtcdDB(root); err != nil || got != want {
		t.Errorf("FindEtcdDB = %q, %v, want %q", got, err, want)
	}
}

// heapProfile is a gzipped heap profile whose samples are (stack, bytes,
// objects), stacks leaf first.
func heapProfile(t *testing.T, samples ...struct {
	stack          []string
	bytes, objects int64
}) []byte {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}, {Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"}},
		PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"},
	}
	funcs := map[string]*profile.Location{}
	for _, s := range samples {
		var locs []*profile.Location
		for _, name := range s.stack {
			loc := funcs[name]
			if loc == nil {
				fn := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name}
				p.Function = append(p.Function, fn)
				loc = &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn}}}
				p.Location = append(p.Location, loc)
				funcs[name] = loc
			}
			locs = append(locs, loc)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{0, 0, s.objects, s.bytes}})
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type stackSample = struct {
	stack          []string
	bytes, objects int64
}

func TestDiffHeap(t *testing.T) {
	base := heapProfile(t,
		stackSample{[]string{"cacher.grow", "cacher.processEvent", "main"}, 10 << 20, 100},
		stackSample{[]string{"json.Unmarshal", "handler.list", "main"}, 4 << 20, 50},
		stackSample{[]string{"bbolt.mmap", "main"}, 8 << 20, 1},
	)
	end := heapProfile(t,
		stackSample{[]string{"cacher.grow", "cacher.processEvent", "main"}, 30 << 20, 300},
		stackSample{[]string{"json.Unmarshal", "handler.list", "main"}, 2 << 20, 20},
		stackSample{[]string{"bbolt.mmap", "main"}, 8 << 20, 1},
		stackSample{[]string{"newThing", "handler.list", "main"}, 1 << 20, 10},
	)
	d, err := DiffHeap(base, end, 3)
	if err != nil {
		t.Fatal(err)
	}
	if d.InuseBytes != 19<<20 || d.InuseObjects != 180 {
		t.Errorf("totals %+v, want +19 MiB, +180 objects", d)
	}
	if len(d.Top) != 3 {
		t.Fatalf("top %+v, want 3 entries", d.Top)
	}
	if e := d.Top[0]; e.Function != "cacher.grow" || e.FlatBytes != 20<<20 || e.CumBytes != 20<<20 || e.FlatObjects != 200 {
		t.Errorf("first %+v, want cacher.grow +20 MiB, +200 objects", e)
	}
	// Shrunk counts as changed, as in go tool pprof -top; main holds
	// everything: its flat is 0, its cum the total.
	if e := d.Top[1]; e.Function != "json.Unmarshal" || e.FlatBytes != -2<<20 || e.FlatObjects != -30 {
		t.Errorf("second %+v, want json.Unmarshal -2 MiB", e)
	}
	if e := d.Top[2]; e.Function != "newThing" || e.FlatBytes != 1<<20 {
		t.Errorf("third %+v, want newThing +1 MiB", e)
	}
	if b, o, err := heapTotals(end); err != nil || b != 41<<20 || o != 331 {
		t.Errorf("heapTotals = %d, %d, %v", b, o, err)
	}
	var text bytes.Buffer
	WriteDiff(&text, d, 2)
	if !strings.Contains(text.String(), "inuse_space +19.0 MiB") || !strings.Contains(text.String(), "+20.0 MiB") || strings.Contains(text.String(), "main\n") {
		t.Errorf("diff text:\n%s", text.String())
	}
	if _, err := DiffHeap([]byte("not a profile"), end, 3); err == nil {
		t.Error("a broken profile diffed")
	}
}

func TestParseVariants(t *testing.T) {
	vs, err := ParseVariants([]string{"carried=bin/kcp", "bin/kcp-pristine"}, []string{"kcp-pristine=--watch-cache=false", "kcp-pristine=--v=1"}, []string{"carried=json:0", "v1:0,kcp:"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].Name != "carried" || vs[0].Binary != "bin/kcp" || len(vs[0].ListerShapes) != 1 || vs[0].ListerShapes[0].Name() != "json:0" {
		t.Errorf("carried: %+v", vs[0])
	}
	if vs[1].Name != "kcp-pristine" || strings.Join(vs[1].Args, " ") != "--watch-cache=false --v=1" || len(vs[1].ListerShapes) != 2 {
		t.Errorf("pristine: %+v", vs[1])
	}
	for _, bad := range [][3][]string{
		{{"a=x", "a=y"}, nil, nil},
		{{"a=x"}, {"b=--y"}, nil},
		{{"a=x"}, {"a"}, nil},
		{{"a=x"}, nil, {"b=v1:0"}},
		{{"a=x"}, nil, {"a=watch:v1:0"}},
	} {
		if _, err := ParseVariants(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("ParseVariants(%q) passed", bad)
		}
	}
}

// TestWriteResult: soak.json reads back, the charts are SVG with every
// variant, the text has the samples' table.
func TestWriteResult(t *testing.T) {
	r := &Result{Load: DefaultOptions().Load, Resources: []string{"clusterroles.rbac.authorization.k8s.io/v1"}, Interval: 30 * time.Second}
	for i, name := range []string{"carried", "stock-nocache"} {
		v := &VariantRun{Variant: Variant{Name: name, Binary: "bin/" + name}, Listers: []string{"v1:0", "v1:0"}}
		for j := range 3 {
			v.Samples = append(v.Samples, Sample{At: time.Duration(j) * 30 * time.Second, RSSBytes: float64((500 + 10*j + i) << 20), HeapInuseBytes: 200 << 20, EtcdDBBytes: float64(j << 20)})
		}
		r.Variants = append(r.Variants, v)
	}
	dir := t.TempDir()
	if err := r.write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResult(filepath.Join(dir, ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Variants) != 2 || len(back.Variants[1].Samples) != 3 || back.Variants[1].Samples[2].RSSBytes != r.Variants[1].Samples[2].RSSBytes {
		t.Errorf("read back %+v", back)
	}
	for _, f := range []string{MemorySVG, EtcdSVG} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("<?xml")) || !bytes.Contains(b, []byte("stock-nocache")) {
			t.Errorf("%s is not an SVG naming both kcps", f)
		}
	}
	// Redraw diffs the profiles the result names, and draws again.
	base := heapProfile(t, stackSample{[]string{"a", "main"}, 1 << 20, 1})
	end := heapProfile(t, stackSample{[]string{"a", "main"}, 3 << 20, 2})
	for name, data := range map[string][]byte{"carried/heap-2m.pb.gz": base, "carried/heap-end.pb.gz": end} {
		if err := writeFile(filepath.Join(dir, name), data); err != nil {
			t.Fatal(err)
		}
	}
	back.Variants[0].Profiles = []HeapProfile{{Label: "2m", File: "carried/heap-2m.pb.gz"}, {Label: "end", File: "carried/heap-end.pb.gz"}}
	if err := back.write(dir); err != nil {
		t.Fatal(err)
	}
	again, err := Redraw(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := again.Variants[0].Diffs; len(d) != 1 || d[0].Base != "2m" || d[0].InuseBytes != 2<<20 || len(again.Variants[1].Diffs) != 0 {
		t.Errorf("redrawn diffs %+v", d)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "RSS MiB") || !strings.Contains(text.String(), "1m0s") || !strings.Contains(text.String(), "verdict: NOT clean") {
		t.Errorf("text:\n%s", text.String())
	}
}

func TestLabel(t *testing.T) {
	for d, want := range map[time.Duration]string{2 * time.Minute: "2m", 90 * time.Second: "1m30s", 10 * time.Second: "10s"} {
		if got := label(d); got != want {
			t.Errorf("label(%s) = %q, want %q", d, got, want)
		}
	}
}
