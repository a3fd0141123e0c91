package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// Sample is one look at a kcp under the soak: its memory from /metrics, its
// embedded etcd's size and revision, and its watch caches' capacity.
type Sample struct {
	// At is the time since the hammer started on this kcp (seeding, a few
	// seconds, comes first).
	At time.Duration `json:"atNanos"`
	// RSSBytes is process_resident_memory_bytes (read from /proc/self by
	// kcp's process collector).
	RSSBytes float64 `json:"rssBytes"`
	// RSSAnonBytes and RSSFileBytes split it, from /proc/<pid>/status
	// (RssAnon, RssFile): the Go heap and stacks are anonymous memory,
	// etcd's database is a file kcp maps (bbolt), so its pages count as
	// RssFile. 0 where /proc has no split.
	RSSAnonBytes float64 `json:"rssAnonBytes"`
	RSSFileBytes float64 `json:"rssFileBytes"`
	// HeapInuseBytes and HeapObjects are go_memstats_heap_inuse_bytes and
	// go_memstats_heap_objects; Goroutines go_goroutines.
	HeapInuseBytes float64 `json:"heapInuseBytes"`
	HeapObjects    float64 `json:"heapObjects"`
	Goroutines     float64 `json:"goroutines"`
	// EtcdDBBytes is etcd's database size: etcd_mvcc_db_total_size_in_bytes
	// when kcp's /metrics has it, else the size of the member/snap/db file
	// under kcp's root directory (the same number: the bbolt file).
	EtcdDBBytes float64 `json:"etcdDBBytes"`
	// EtcdRevision is etcd_debugging_mvcc_current_revision when /metrics has
	// it, else the resourceVersion of a consistent LIST (kcp's
	// resourceVersions are etcd's revisions).
	EtcdRevision float64 `json:"etcdRevision"`
	// EtcdDBInUseBytes (etcd_mvcc_db_total_size_in_use_in_bytes), the
	// database's pages in use, EtcdCompactRevision
	// (etcd_debugging_mvcc_compact_revision), the revision kcp's apiserver
	// last compacted etcd to, and EtcdKeys (etcd_debugging_mvcc_keys_total):
	// 0 when etcd's metrics are not reachable.
	EtcdDBInUseBytes    float64 `json:"etcdDBInUseBytes"`
	EtcdCompactRevision float64 `json:"etcdCompactRevision"`
	EtcdKeys            float64 `json:"etcdKeys"`
	// WatchCacheCapacity is watch_cache_capacity (apiserver_ in later
	// Kubernetes) summed over resources: the watch caches' event windows; WatchCacheEvents is
	// apiserver_watch_cache_events_received_total, summed. Both 0 when kcp
	// runs without a watch cache.
	WatchCacheCapacity float64 `json:"watchCacheCapacity"`
	WatchCacheEvents   float64 `json:"watchCacheEvents"`
	// StorageObjects is apiserver_storage_objects summed: what etcd holds.
	StorageObjects float64 `json:"storageObjects"`
}

// The metrics a sample reads. The first four must be there.
const (
	metricRSS            = "process_resident_memory_bytes"
	metricHeapInuse      = "go_memstats_heap_inuse_bytes"
	metricHeapObjects    = "go_memstats_heap_objects"
	metricGoroutines     = "go_goroutines"
	metricEtcdDB         = "etcd_mvcc_db_total_size_in_bytes"
	metricEtcdRevision   = "etcd_debugging_mvcc_current_revision"
	metricEtcdDBInUse    = "etcd_mvcc_db_total_size_in_use_in_bytes"
	metricEtcdCompactRev = "etcd_debugging_mvcc_compact_revision"
	metricEtcdKeys       = "etcd_debugging_mvcc_keys_total"
	metricWatchCacheCap  = "watch_cache_capacity" // the fork's name; upstream's later is apiserver_watch_cache_capacity
	metricWatchCacheCap2 = "apiserver_watch_cache_capacity"
	metricWatchCacheEvts = "apiserver_watch_cache_events_received_total"
	metricStorageObjects = "apiserver_storage_objects"
)

// SampleOf reads a Sample from a scrape of kcp's /metrics (with the embedded
// etcd's etcd_* metrics appended, EtcdMetrics). It fails when the process or
// Go runtime metrics are missing; etcd's are optional (0 when absent, and
// Has says which were there).
func SampleOf(m server.Metrics, at time.Duration) (Sample, error) {
	s := Sample{At: at}
	for name, dst := range map[string]*float64{
		metricRSS: &s.RSSBytes, metricHeapInuse: &s.HeapInuseBytes, metricHeapObjects: &s.HeapObjects, metricGoroutines: &s.Goroutines,
	} {
		if !Has(m, name) {
			return Sample{}, fmt.Errorf("/metrics has no %s", name)
		}
		*dst = m.Sum(name, nil)
	}
	s.EtcdDBBytes = m.Sum(metricEtcdDB, nil)
	s.EtcdRevision = m.Sum(metricEtcdRevision, nil)
	s.EtcdDBInUseBytes = m.Sum(metricEtcdDBInUse, nil)
	s.EtcdCompactRevision = m.Sum(metricEtcdCompactRev, nil)
	s.EtcdKeys = m.Sum(metricEtcdKeys, nil)
	s.WatchCacheCapacity = m.Sum(metricWatchCacheCap, nil) + m.Sum(metricWatchCacheCap2, nil)
	s.WatchCacheEvents = m.Sum(metricWatchCacheEvts, nil)
	s.StorageObjects = m.Sum(metricStorageObjects, nil)
	return s, nil
}

// EtcdMetrics are the etcd_* samples of a scrape of etcd's own metrics
// listener (which also has the process's go_* and process_*: the same
// process as kcp's).
func EtcdMetrics(m server.Metrics) server.Metrics {
	var out server.Metrics
	for _, s := range m {
		if strings.HasPrefix(s.Name, "etcd_") {
			out = append(out, s)
		}
	}
	return out
}

// scrape reads a plain-HTTP /metrics.
func scrape(ctx context.Context, url string) (server.Metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return server.ParseMetrics(string(body))
}

// Has says whether the scrape has a sample called name.
func Has(m server.Metrics, name string) bool {
	return slices.ContainsFunc(m, func(s server.Sample) bool { return s.Name == name })
}

// sampler takes the samples of one kcp.
type sampler struct {
	srv     *server.KCP
	started time.Time
	// etcdMetrics is the embedded etcd's metrics listener
	// (http://127.0.0.1:PORT/metrics), "" when it has none.
	etcdMetrics string
	// dbFile is etcd's bbolt file under kcp's root directory, found once.
	dbFile string
}

// sample takes one Sample: /metrics, then etcd's size and revision from the
// disk and a LIST where /metrics lacks them.
func (p *sampler) sample(ctx context.Context) (Sample, error) {
	m, err := p.srv.Metrics(ctx)
	if err != nil {
		return Sample{}, fmt.Errorf("sampling %s: %w", p.srv.URL(), err)
	}
	if p.etcdMetrics != "" {
		e, err := scrape(ctx, p.etcdMetrics)
		if err != nil {
			return Sample{}, fmt.Errorf("sampling the embedded etcd: %w", err)
		}
		m = append(m, EtcdMetrics(e)...)
	}
	s, err := SampleOf(m, time.Since(p.started))
	if err != nil {
		return Sample{}, fmt.Errorf("sampling %s: %w", p.srv.URL(), err)
	}
	if st, err := ProcStatus(p.srv.PID()); err == nil {
		s.RSSAnonBytes, s.RSSFileBytes = float64(st["RssAnon"]), float64(st["RssFile"])
	}
	if !Has(m, metricEtcdDB) {
		if s.EtcdDBBytes, err = p.dbSize(); err != nil {
			return Sample{}, err
		}
	}
	if !Has(m, metricEtcdRevision) {
		if s.EtcdRevision, err = revision(ctx, p.srv); err != nil {
			return Sample{}, err
		}
	}
	return s, nil
}

// dbSize is the size of etcd's bbolt file (member/snap/db) under kcp's root
// directory.
func (p *sampler) dbSize() (float64, error) {
	if p.dbFile == "" {
		f, err := FindEtcdDB(p.srv.RootDir())
		if err != nil {
			return 0, err
		}
		p.dbFile = f
	}
	fi, err := os.Stat(p.dbFile)
	if err != nil {
		return 0, fmt.Errorf("etcd's database: %w", err)
	}
	return float64(fi.Size()), nil
}

// ProcStatus reads the sizes of /proc/<pid>/status ("RssAnon: 123 kB"), in
// bytes, by name.
func ProcStatus(pid int) (map[string]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	return parseProcStatus(string(b)), nil
}

func parseProcStatus(text string) map[string]int64 {
	out := map[string]int64{}
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			out[strings.TrimSuffix(f[0], ":")] = n << 10
		}
	}
	return out
}

// FindEtcdDB finds etcd's bbolt file, member/snap/db, under root.
func FindEtcdDB(root string) (string, error) {
	found := ""
	errFound := errors.New("found")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "db" && filepath.Base(filepath.Dir(path)) == "snap" && filepath.Base(filepath.Dir(filepath.Dir(path))) == "member" {
			found = path
			return errFound
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFound) {
		return "", fmt.Errorf("looking for etcd's member/snap/db under %s: %w", root, err)
	}
	if found == "" {
		return "", fmt.Errorf("no etcd member/snap/db under %s", root)
	}
	return found, nil
}

// revision is the resourceVersion of a consistent LIST of one namespace in
// the root logical cluster: etcd's current revision.
func revision(ctx context.Context, srv *server.KCP) (float64, error) {
	c, err := kubernetes.NewForConfig(srv.ClusterConfig("root"))
	if err != nil {
		return 0, fmt.Errorf("etcd's revision: %w", err)
	}
	list, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, fmt.Errorf("etcd's revision: LIST namespaces: %w", err)
	}
	rv, err := strconv.ParseFloat(list.ResourceVersion, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd's revision: resourceVersion %q: %w", list.ResourceVersion, err)
	}
	return rv, nil
}
