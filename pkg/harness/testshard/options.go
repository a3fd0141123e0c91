// Package testshard assembles a test shard built from kcp's fork, not kcp.
//
// kcp's own pkg/server cannot be linked here, so this package wires the same
// building blocks a kcp shard serves requests with: kcp's embedded etcd, the
// fork's generic API server with the watch cache in front of etcd, the fork's
// typed registries for ConfigMaps, ClusterRoles and Roles, and kcp's request
// filters from github.com/kcp-dev/kcp/pkg/server/filters in kcp's order.
// Everything that is not on that serving path (LogicalCluster objects,
// workspaces, admission, APIExports, the front proxy) is left out.
//
// It is a test fixture: it only ever binds loopback addresses and treats every
// loopback caller as a cluster admin.
package testshard

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/harness/cachemutation"
)

// Options configure one test shard.
type Options struct {
	// RootDir holds everything the shard writes (etcd data, certificates,
	// admin.kubeconfig). Empty means a fresh temporary directory that Run
	// removes on exit unless KeepRootDir is set.
	RootDir string
	// KeepRootDir keeps RootDir on exit when Run created it.
	KeepRootDir bool

	// BindAddress is the address the API server listens on. It must be a
	// loopback address.
	BindAddress string
	// SecurePort is the TLS port; 0 picks a free one.
	SecurePort int

	// WatchCache puts the fork's cacher in front of etcd (as kcp does).
	// Turning it off is the control: every LIST then goes to etcd.
	WatchCache bool

	// EtcdUnsafeNoFsync makes the embedded etcd skip fsync. Only for
	// throw-away data, as in tests.
	EtcdUnsafeNoFsync bool

	// CacheMutationDetector wraps every registry's storage in the
	// watch-cache mutation detector (pkg/harness/cachemutation), a debugging aid:
	// each object a read hands out is fingerprinted and compared again, and a
	// read path that writes into it is reported on stderr (one
	// cachemutation.FormatLine per finding), in the log and in /metrics.
	// KCP_CARRY_CACHE_MUTATION_DETECTOR=true turns it on as well.
	CacheMutationDetector bool
	// CacheMutationDetectorInterval is the period of its comparisons
	// (0: cachemutation.DefaultInterval).
	CacheMutationDetectorInterval time.Duration

	// OnReady, if set, is called once the shard answers /readyz and
	// admin.kubeconfig has been written.
	OnReady func(Ready) `json:"-"`
}

// Ready describes a running shard. It is what cmd/testshard prints as its
// ready line.
type Ready struct {
	// URL is the base URL, without /clusters/.
	URL string `json:"url"`
	// Kubeconfig is the path of admin.kubeconfig (contexts "base" and "root").
	Kubeconfig string `json:"kubeconfig"`
	// CAFile is the serving CA.
	CAFile string `json:"caFile"`
	// RootDir is the directory the shard writes to.
	RootDir string `json:"rootDir"`
	// WatchCache tells whether the watch cache is on.
	WatchCache bool `json:"watchCache"`
	// CacheMutationDetector tells whether the cache mutation detector is on.
	CacheMutationDetector bool `json:"cacheMutationDetector"`
	// PID is the shard's process id.
	PID int `json:"pid"`
}

// NewOptions returns the defaults: a temporary root dir, 127.0.0.1 on a free
// port, the watch cache on.
func NewOptions() *Options {
	return &Options{
		BindAddress:                   "127.0.0.1",
		SecurePort:                    0,
		WatchCache:                    true,
		CacheMutationDetectorInterval: cachemutation.DefaultInterval,
	}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.RootDir, "root-dir", o.RootDir, "Directory for etcd data, certificates and admin.kubeconfig. Empty: a new temporary directory, removed on exit unless --keep-root-dir.")
	fs.BoolVar(&o.KeepRootDir, "keep-root-dir", o.KeepRootDir, "Keep the temporary root directory on exit.")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "Loopback address to serve on (127.0.0.0/8 or ::1 only; this is a test shard).")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "TLS port to serve on; 0 picks a free port and reports it in the ready line.")
	fs.BoolVar(&o.WatchCache, "watch-cache", o.WatchCache, "Serve reads through the watch cache, as kcp does. --watch-cache=false is the control: LISTs go to etcd.")
	fs.BoolVar(&o.EtcdUnsafeNoFsync, "etcd-unsafe-no-fsync", o.EtcdUnsafeNoFsync, "Let the embedded etcd skip fsync (throw-away test data only).")
	fs.BoolVar(&o.CacheMutationDetector, "cache-mutation-detector", o.CacheMutationDetector, "Debugging aid: report read paths that write into objects shared with the watch cache (stderr, log, /metrics). Also "+cachemutation.EnvVar+"=true. Costs an extra cache read and deep copies per read; off by default.")
	fs.DurationVar(&o.CacheMutationDetectorInterval, "cache-mutation-detector-interval", o.CacheMutationDetectorInterval, "How often the cache mutation detector compares the objects requests hold with their fingerprints (besides when each request completes).")
}

// Complete turns the detector on when KCP_CARRY_CACHE_MUTATION_DETECTOR
// says so, so that the options show what the shard will do; a value that is
// not a boolean is an error naming the variable.
func (o *Options) Complete() error {
	on, err := cachemutation.EnabledFromEnv()
	if err != nil {
		return err
	}
	o.CacheMutationDetector = o.CacheMutationDetector || on
	return nil
}

// Validate reports bad options, naming the flag.
func (o *Options) Validate() error {
	if _, err := loopbackIP(o.BindAddress); err != nil {
		return err
	}
	if o.SecurePort < 0 || o.SecurePort > 65535 {
		return fmt.Errorf("--secure-port %d is out of range 0-65535", o.SecurePort)
	}
	if o.CacheMutationDetectorInterval < 0 {
		return fmt.Errorf("--cache-mutation-detector-interval %s: want a positive duration", o.CacheMutationDetectorInterval)
	}
	if _, err := cachemutation.EnabledFromEnv(); err != nil {
		return err
	}
	return nil
}

// cacheMutationDetector reports whether the flag or the environment turns
// the detector on (Validate has checked the environment).
func (o *Options) cacheMutationDetector() bool {
	on, _ := cachemutation.EnabledFromEnv()
	return o.CacheMutationDetector || on
}

// loopbackIP parses a --bind-address value and refuses anything that is not
// a loopback address.
func loopbackIP(addr string) (net.IP, error) {
	a := strings.TrimSpace(addr)
	if a == "localhost" {
		return net.IPv4(127, 0, 0, 1), nil
	}
	ip := net.ParseIP(strings.Trim(a, "[]"))
	if ip == nil {
		return nil, fmt.Errorf("--bind-address %q is not an IP address: the test shard binds loopback addresses only (127.0.0.1, ::1)", addr)
	}
	if !ip.IsLoopback() {
		return nil, fmt.Errorf("--bind-address %q is not a loopback address: the test shard refuses to serve beyond this machine (use 127.0.0.1 or ::1)", addr)
	}
	return ip, nil
}
