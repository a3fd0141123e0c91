package hammer

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
)

// Scope says where the listers and watchers send their partial-metadata requests.
type Scope string

const (
	// ScopeWildcard sends them to /clusters/*/... (the requests that trigger the bug).
	ScopeWildcard Scope = "wildcard"
	// ScopeCluster sends them to /clusters/<name>/..., one logical cluster at a time (a control).
	ScopeCluster Scope = "cluster"
)

// WriteMode says how the writers change the label on the seeded objects.
type WriteMode string

const (
	WriteUpdate WriteMode = "update" // GET from etcd, then UPDATE with the resourceVersion read
	WritePatch  WriteMode = "patch"  // JSON merge PATCH of the label
	WriteMixed  WriteMode = "mixed"  // even writers update, odd writers patch
)

// Options configure one hammer run. Start from DefaultOptions; every field is
// used as given (zero listers means no listers).
type Options struct {
	// Config reaches the server. Its Host is the server's base URL; a trailing
	// /clusters/<name> is stripped, requests go to <host>/clusters/<name>/... and
	// <host>/clusters/*/.... Required.
	Config *rest.Config

	Resources []Resource // what to seed, list, watch and write
	Clusters  []string   // logical clusters to seed and write in
	Namespace string     // namespace for namespaced resources (created when missing)
	Prefix    string     // name prefix of the seeded objects

	// Load is the size and bound of the run (objects, annotations, workers,
	// duration, budget), the settings the hammer, evidence and soak share.
	Load

	ListerShapes []requestshape.Shape // per lister, cycled; empty means requestshape.HammerListers
	PageSize     int64                // limit for paginated listers
	WatchWindow  time.Duration        // how long one watch stays open before it is re-opened
	// MixedWatchers is how many groups of mixed watchers run check (d): each
	// keeps a wildcard and a single-cluster partial-metadata watch of the same
	// resource open at once, at meta.k8s.io v1 and v1beta1.
	MixedWatchers int
	WriteMode     WriteMode

	Scope Scope // where listers and watchers go

	RequestTimeout time.Duration // per request
	SyncTimeout    time.Duration // how long to wait for the watch cache to show the seeded objects

	NoSeed  bool // do not create missing objects (they must exist)
	Cleanup bool // delete the objects this run created when it ends

	// SequentialProbe replaces the load by one wildcard partial LIST per
	// resource, followed by the pollution check: one request is enough.
	SequentialProbe      bool
	ProbeResourceVersion string
	ProbeMetaVersion     string // "v1" or "v1beta1"

	NoAfterChecks bool // skip the after-load checks (b) and (c), which read every object back

	// DeathThreshold is how many transport errors in a row, after at least one
	// success, make the hammer check whether the server is gone.
	DeathThreshold int
	// ServerExited, when set, is closed when the server process is known to have
	// exited (a test fixture knows); the hammer then reports death at once.
	ServerExited <-chan struct{}

	// Progress receives a live progress line (carriage-return updated) when set.
	Progress io.Writer
	// Logf receives phase messages when set.
	Logf func(format string, args ...any)
}

// Load is the size and bound of a hammer run: how much it seeds, how many
// workers it runs and for how long. The hammer, evidence and soak commands
// take these settings with the same flags (AddFlags).
type Load struct {
	Objects int // seeded objects per logical cluster and resource
	// Annotations is how many extra annotations each seeded object carries
	// besides its note. Real objects carry several; a map past Go's 8-entry
	// small-map size is a wider target for concurrent writes and iteration:
	// with 16, the pristine test shard dies within seconds instead of
	// sometimes surviving 30 s.
	Annotations int

	Listers  int // concurrent partial-metadata listers
	Watchers int // concurrent partial-metadata watchers (requestshape.HammerWatchers)
	Writers  int // concurrent label writers

	Duration    time.Duration // bound of the load phase
	MaxRequests int64         // request budget of the load phase (all workers together)
}

// DefaultLoad is the load that crashed a real kcp v0.32.3: 8 listers, 2
// watchers and 4 writers over 50 objects (16 annotations each) per cluster
// and resource, for 20 s or 200,000 requests.
func DefaultLoad() Load {
	return Load{
		Objects:     50,
		Annotations: 16,
		Listers:     8,
		Watchers:    2,
		Writers:     4,
		Duration:    20 * time.Second,
		MaxRequests: 200000,
	}
}

// AddFlags binds the load to fs; the values l holds are the defaults, so
// each command sets its own before calling it.
func (l *Load) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&l.Objects, "objects", l.Objects, "objects per logical cluster and resource")
	fs.IntVar(&l.Annotations, "annotations", l.Annotations, "extra annotations on each seeded object (besides its note)")
	fs.IntVar(&l.Listers, "listers", l.Listers, "concurrent wildcard partial-metadata listers")
	fs.IntVar(&l.Watchers, "watchers", l.Watchers, "concurrent wildcard partial-metadata watchers")
	fs.IntVar(&l.Writers, "writers", l.Writers, "concurrent label writers")
	fs.DurationVar(&l.Duration, "duration", l.Duration, "bound of the load")
	fs.Int64Var(&l.MaxRequests, "max-requests", l.MaxRequests, "request budget of the load (all workers)")
}

// DefaultOptions returns the defaults of the CLI: DefaultLoad against the
// root logical cluster.
func DefaultOptions() Options {
	return Options{
		Resources:            []Resource{ClusterRoles, ConfigMaps},
		Clusters:             []string{"root"},
		Namespace:            "default",
		Prefix:               "hammer-",
		Load:                 DefaultLoad(),
		PageSize:             25,
		WatchWindow:          3 * time.Second,
		WriteMode:            WriteMixed,
		Scope:                ScopeWildcard,
		RequestTimeout:       30 * time.Second,
		SyncTimeout:          30 * time.Second,
		ProbeResourceVersion: "0",
		ProbeMetaVersion:     "v1",
		DeathThreshold:       5,
	}
}

// Validate reports the first bad option, naming it as the CLI flag does.
func (o *Options) Validate() error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...)))
	}
	if o.Config == nil || o.Config.Host == "" {
		errs = append(errs, errors.New("no server: give --kubeconfig/--context or --server"))
	}
	if len(o.Resources) == 0 {
		bad("resources", "no resource given")
	}
	for _, r := range o.Resources {
		if _, ok := Known[r.Resource]; !ok {
			bad("resources", "unknown resource %s", r)
		}
	}
	if len(o.Clusters) == 0 {
		bad("clusters", "no logical cluster given")
	}
	for _, c := range o.Clusters {
		if c == "" || c == "*" || strings.ContainsAny(c, "/?#") {
			bad("clusters", "%q is not a logical cluster name", c)
		}
	}
	if o.Namespace == "" || strings.ContainsAny(o.Namespace, "/?#") {
		bad("namespace", "%q is not a namespace name", o.Namespace)
	}
	if o.Objects <= 0 {
		bad("objects", "must be positive, got %d", o.Objects)
	}
	if o.Annotations < 0 || o.Annotations > 100 {
		bad("annotations", "must be between 0 and 100, got %d", o.Annotations)
	}
	if o.Prefix == "" || strings.ContainsAny(o.Prefix, "/?#") {
		bad("prefix", "%q cannot prefix object names", o.Prefix)
	}
	if o.Listers < 0 || o.Watchers < 0 || o.Writers < 0 || o.MixedWatchers < 0 {
		bad("listers/--watchers/--writers/--mixed-watchers", "must not be negative")
	}
	if o.PageSize <= 0 {
		bad("page-size", "must be positive, got %d", o.PageSize)
	}
	if o.WatchWindow <= 0 {
		bad("watch-window", "must be positive, got %s", o.WatchWindow)
	}
	switch o.WriteMode {
	case WriteUpdate, WritePatch, WriteMixed:
	default:
		bad("write-mode", "%q is not one of update, patch, mixed", o.WriteMode)
	}
	switch o.Scope {
	case ScopeWildcard, ScopeCluster:
	default:
		bad("scope", "%q is not one of wildcard, cluster", o.Scope)
	}
	if o.Duration <= 0 {
		bad("duration", "must be positive, got %s", o.Duration)
	}
	if o.MaxRequests <= 0 {
		bad("max-requests", "must be positive, got %d", o.MaxRequests)
	}
	if o.RequestTimeout <= 0 {
		bad("request-timeout", "must be positive, got %s", o.RequestTimeout)
	}
	if o.SyncTimeout <= 0 {
		bad("sync-timeout", "must be positive, got %s", o.SyncTimeout)
	}
	if o.ProbeResourceVersion != "" && o.ProbeResourceVersion != "0" {
		bad("probe-rv", "must be \"\" or \"0\", got %q", o.ProbeResourceVersion)
	}
	if o.ProbeMetaVersion != "v1" && o.ProbeMetaVersion != "v1beta1" {
		bad("probe-meta-version", "must be v1 or v1beta1, got %q", o.ProbeMetaVersion)
	}
	if o.DeathThreshold <= 0 {
		bad("death-threshold", "must be positive, got %d", o.DeathThreshold)
	}
	if !o.SequentialProbe && o.Listers+o.Watchers+o.Writers+o.MixedWatchers == 0 {
		errs = append(errs, errors.New("nothing to do: no listers, watchers or writers"))
	}
	for _, s := range o.ListerShapes {
		if err := CheckListerShape(s); err != nil {
			bad("lister-shapes", "%v", err)
		}
	}
	return errors.Join(errs...)
}
