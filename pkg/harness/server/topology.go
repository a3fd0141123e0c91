package server

// kcp's sharded topology from built binaries: a cache server, N kcp shards
// (the first is root), standalone virtual workspaces (one per shard) and the
// front-proxy, each its own Server, all on 127.0.0.1 and free ports. The
// flags and the certificate and kubeconfig layout are those of kcp's
// cmd/sharded-test-server (v0.32.3), which starts the same servers but takes
// all of them down when one dies; here each lives and dies alone, so a test
// can watch the other shard keep serving.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// TopologyReadyTimeout is the default bound of each topology server's wait
// for /readyz.
const TopologyReadyTimeout = 4 * time.Minute

// TopologyBinaries are the four servers of the topology.
type TopologyBinaries struct {
	KCP, FrontProxy, CacheServer, VirtualWorkspaces string
}

// TopologyCommands are kcp's main packages of the topology, in the order of
// TopologyBinaries.
var TopologyCommands = []string{"cmd/kcp", "cmd/kcp-front-proxy", "cmd/cache-server", "cmd/virtual-workspaces"}

// TopologyBinariesIn names the binaries `carry build` writes into dir: kcp,
// kcp-front-proxy, cache-server, virtual-workspaces, each with suffix
// ("-pristine" for a pristine build).
func TopologyBinariesIn(dir, suffix string) TopologyBinaries {
	p := func(name string) string { return filepath.Join(dir, name+suffix) }
	return TopologyBinaries{KCP: p("kcp"), FrontProxy: p("kcp-front-proxy"), CacheServer: p("cache-server"), VirtualWorkspaces: p("virtual-workspaces")}
}

// All lists the binaries in the order of TopologyCommands.
func (b TopologyBinaries) All() []string {
	return []string{b.KCP, b.FrontProxy, b.CacheServer, b.VirtualWorkspaces}
}

// TopologyOptions say what to run where.
type TopologyOptions struct {
	Binaries TopologyBinaries
	// Dir holds every server's root directory, the certificates and the
	// kubeconfigs. Required.
	Dir string
	// Shards is the number of kcp shards (default 2); shard 0 is root.
	Shards int
	// Env are extra environment variables ("K=V") of every server.
	Env []string
	// ShardArgs are extra flags for every shard's `kcp start`
	// (--watch-cache=false, say).
	ShardArgs []string
	// ReadyTimeout bounds each server's wait for /readyz (default TopologyReadyTimeout).
	ReadyTimeout time.Duration
	// Progress receives a line per server when it is ready; nil discards.
	Progress func(format string, args ...any)
}

// Component is one running server of the topology; its URL is
// https://127.0.0.1:PORT and its Config the one it was seen ready with.
type Component struct {
	*Server
	// Name is "cache-server", "shard-0", "vw-0" or "front-proxy".
	Name string
	// Dir is its root directory; its output is also in Dir/output.log.
	Dir       string
	StartedIn time.Duration
	log       *os.File
}

// Topology is a running sharded kcp.
type Topology struct {
	opts  TopologyOptions
	pki   *pki
	ports ports

	Cache             *Component
	Shards            []*Component
	VirtualWorkspaces []*Component
	FrontProxy        *Component
	// StartedIn is from the first exec to the front-proxy's /readyz.
	StartedIn time.Duration

	cacheKubeconfig string
	adminKubeconfig string
}

// ports are the topology's listening ports, chosen up front because the
// shards must know the front-proxy's and their virtual workspaces' addresses.
type ports struct {
	frontProxy                      int
	cache, cacheEtcd, cacheEtcdPeer int
	shard, shardEtcd, shardEtcdPeer []int
	virtualWorkspaces               []int
}

// ShardName is shard i's name in kcp: root for 0, shard-<i> otherwise (as
// sharded-test-server names them).
func ShardName(i int) string {
	if i == 0 {
		return "root"
	}
	return fmt.Sprintf("shard-%d", i)
}

// StartTopology lays out the certificates and starts the cache server, the
// shards (root first), the virtual workspaces and the front-proxy, waiting
// for each server's /readyz before the next that needs it. On an error it
// stops what it started.
func StartTopology(ctx context.Context, opts TopologyOptions) (t *Topology, err error) {
	if opts.Dir == "" {
		return nil, errors.New("server: TopologyOptions.Dir is required")
	}
	for _, b := range opts.Binaries.All() {
		if b == "" {
			return nil, errors.New("server: TopologyOptions.Binaries names no binary for one of the servers")
		}
		if _, err := os.Stat(b); err != nil {
			return nil, fmt.Errorf("server: %w (build the sharded servers with `make sharded KCP_SOURCE=...`)", err)
		}
	}
	if opts.Shards <= 0 {
		opts.Shards = 2
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = TopologyReadyTimeout
	}
	if opts.Progress == nil {
		opts.Progress = func(string, ...any) {}
	}
	t = &Topology{opts: opts}
	defer func() {
		if err != nil {
			t.Stop()
			t = nil
		}
	}()
	if t.pki, err = newPKI(filepath.Join(opts.Dir, "pki")); err != nil {
		return t, err
	}
	if t.ports, err = choosePorts(opts.Shards); err != nil {
		return t, err
	}
	began := time.Now()
	if err := t.startCache(ctx); err != nil {
		return t, err
	}
	for i := range opts.Shards {
		if err := t.startShard(ctx, i); err != nil {
			return t, err
		}
	}
	for i := range opts.Shards {
		if err := t.startVirtualWorkspaces(ctx, i); err != nil {
			return t, err
		}
	}
	if err := t.startFrontProxy(ctx); err != nil {
		return t, err
	}
	t.StartedIn = time.Since(began)
	return t, nil
}

func choosePorts(shards int) (ports, error) {
	n := 4 + 4*shards
	free, err := FreePorts(n)
	if err != nil {
		return ports{}, err
	}
	next := func() int { p := free[0]; free = free[1:]; return p }
	p := ports{frontProxy: next(), cache: next(), cacheEtcd: next(), cacheEtcdPeer: next()}
	for range shards {
		p.shard = append(p.shard, next())
		p.shardEtcd = append(p.shardEtcd, next())
		p.shardEtcdPeer = append(p.shardEtcdPeer, next())
		p.virtualWorkspaces = append(p.virtualWorkspaces, next())
	}
	return p, nil
}

// Components are the running servers: cache server, shards, virtual
// workspaces, front-proxy.
func (t *Topology) Components() []*Component {
	var out []*Component
	if t.Cache != nil {
		out = append(out, t.Cache)
	}
	out = append(out, t.Shards...)
	out = append(out, t.VirtualWorkspaces...)
	if t.FrontProxy != nil {
		out = append(out, t.FrontProxy)
	}
	return out
}

// Stop stops every server and returns the errors of those that did not
// stop cleanly when asked (one that had died is no error here: see Died).
// The front-proxy goes first, so no request reaches a stopping shard through
// it; the others stop at once, so one slow to stop (each gets
// DefaultGrace after SIGTERM) does not hold up the rest.
func (t *Topology) Stop() error {
	var (
		mu   sync.Mutex
		errs []error
	)
	stop := func(c *Component) {
		if err := c.Stop(); err != nil && !c.Died() {
			mu.Lock()
			errs = append(errs, fmt.Errorf("%s: %w", c.Name, err))
			mu.Unlock()
		}
		c.log.Close()
	}
	if t.FrontProxy != nil {
		stop(t.FrontProxy)
	}
	var wg sync.WaitGroup
	for _, c := range t.Components() {
		if c != t.FrontProxy {
			wg.Go(func() { stop(c) })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// FrontProxyConfig is kcp-admin at the front-proxy's base URL (no /clusters/).
func (t *Topology) FrontProxyConfig() *rest.Config { return t.frontProxyKubeconfig().restConfig() }

func (t *Topology) frontProxyKubeconfig() kubeconfig {
	return kubeconfig{Name: "base", Server: loopback(t.ports.frontProxy), CA: t.pki.ServingCAFile, Client: t.pki.KCPAdmin}
}

// AdminKubeconfig is kcp-admin's kubeconfig of the front-proxy: contexts
// base and root, as sharded-test-server writes .kcp/admin.kubeconfig.
func (t *Topology) AdminKubeconfig() string { return t.adminKubeconfig }

// ShardConfig is shard i's admin (context shard-base of the admin.kubeconfig
// the shard wrote) at the shard's own base URL, past the front-proxy.
func (t *Topology) ShardConfig(i int) (*rest.Config, error) {
	return t.shardAdmin(t.Shards[i].Dir, t.Shards[i].URL())
}

// CacheConfig is the cache server's client (system:masters) at its base
// URL; kcp's clients reach its data under /services/cache/shards/<shard>.
func (t *Topology) CacheConfig() *rest.Config { return t.cacheClient().restConfig() }

// startComponent runs one server and waits until /readyz answers 200 to cfg.
func (t *Topology) startComponent(ctx context.Context, name, dir, binary string, args []string, cfg func() (*rest.Config, error)) (*Component, error) {
	log, err := os.Create(filepath.Join(dir, "output.log"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cmd := Command{Path: binary, Args: args, Dir: dir, MergeStdout: true, StderrTee: log}
	if len(t.opts.Env) > 0 {
		cmd.Env = append(os.Environ(), t.opts.Env...)
	}
	began := time.Now()
	p, err := Start(cmd)
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &Component{Server: p, Name: name, Dir: dir, log: log}
	if err := p.waitReady(ctx, readiness{what: name, timeout: t.opts.ReadyTimeout, interval: 500 * time.Millisecond, probe: readyzProbe(cfg)}); err != nil {
		_ = p.Stop()
		log.Close()
		return nil, startFailure(p, fmt.Errorf("%s: %w", binary, err), fmt.Sprintf("%s output (all in %s)", name, log.Name()), 30)
	}
	c.StartedIn = time.Since(began)
	t.opts.Progress("%s ready on %s after %s (pid %d)", name, c.URL(), c.StartedIn.Round(time.Millisecond), p.PID())
	return c, nil
}
