package testshard

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"github.com/kcp-dev/embeddedetcd"
	etcdoptions "github.com/kcp-dev/embeddedetcd/options"

	genericoptions "k8s.io/apiserver/pkg/server/options"
)

// startEtcd starts kcp's embedded etcd with its data under dir, on free
// loopback ports, and points etcdOpts at it (server list and client certs).
// It returns once etcd is ready; etcd stops when ctx is cancelled, and the
// returned server reports Stopped() once it has closed.
func startEtcd(ctx context.Context, dir string, etcdOpts *genericoptions.EtcdOptions, watchCache, noFsync bool) (*embeddedetcd.Server, error) {
	clientPort, err := freeLoopbackPort()
	if err != nil {
		return nil, fmt.Errorf("embedded etcd client port: %w", err)
	}
	peerPort, err := freeLoopbackPort()
	if err != nil {
		return nil, fmt.Errorf("embedded etcd peer port: %w", err)
	}

	o := etcdoptions.NewOptions(dir)
	o.Enabled = true
	o.Directory = filepath.Join(dir, "etcd-server")
	o.ClientPort = strconv.Itoa(clientPort)
	o.PeerPort = strconv.Itoa(peerPort)
	if errs := o.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("embedded etcd options: %v", errs)
	}
	completed := o.Complete(etcdOpts)

	cfg, err := embeddedetcd.NewConfig(completed, watchCache)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd config in %s: %w", o.Directory, err)
	}
	// embeddedetcd listens on "localhost:<port>", i.e. loopback only.
	cfg.UnsafeNoFsync = noFsync
	// At "warn" etcd logs a "request stats" line per request; under load that
	// would bury the one thing stderr is kept for (a crash trace).
	cfg.LogLevel = "error"
	server := embeddedetcd.NewServer(cfg.Complete())
	if err := server.Run(ctx); err != nil {
		return nil, fmt.Errorf("embedded etcd in %s: %w", o.Directory, err)
	}
	return server, nil
}

// freeLoopbackPort asks the kernel for a free port on 127.0.0.1. etcd opens
// its own listeners, so there is a short window in which another process
// could take the port; the shard then fails to start with etcd's error.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
