// Package shardedkcp runs kcp's sharded topology from built binaries: a cache
// server, N kcp shards (the first is root), standalone virtual workspaces (one
// per shard) and the front-proxy, each as its own child process (its own
// process group, through pkg/harness/process), all on 127.0.0.1 and free ports.
// The flags and the certificate and kubeconfig layout are those of kcp's
// cmd/sharded-test-server (v0.32.3), which starts the same servers but takes
// all of them down when one dies; here each lives and dies alone, so a test
// can watch the other shard keep serving.
package shardedkcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kcp-carry/kcp-carry/pkg/harness/kcpserver"
	"github.com/kcp-carry/kcp-carry/pkg/harness/process"
)

// DefaultReadyTimeout bounds the wait for each server's /readyz.
const DefaultReadyTimeout = 4 * time.Minute

// Binaries are the four servers of the topology.
type Binaries struct {
	KCP, FrontProxy, CacheServer, VirtualWorkspaces string
}

// Commands are kcp's main packages of the topology, in the order of Binaries.
var Commands = []string{"cmd/kcp", "cmd/kcp-front-proxy", "cmd/cache-server", "cmd/virtual-workspaces"}

// BinariesIn names the binaries `carry build` writes into dir: kcp,
// kcp-front-proxy, cache-server, virtual-workspaces, each with suffix
// ("-pristine" for a pristine build).
func BinariesIn(dir, suffix string) Binaries {
	p := func(name string) string { return filepath.Join(dir, name+suffix) }
	return Binaries{KCP: p("kcp"), FrontProxy: p("kcp-front-proxy"), CacheServer: p("cache-server"), VirtualWorkspaces: p("virtual-workspaces")}
}

// All lists the binaries in the order of Commands.
func (b Binaries) All() []string {
	return []string{b.KCP, b.FrontProxy, b.CacheServer, b.VirtualWorkspaces}
}

// Options say what to run where.
type Options struct {
	Binaries Binaries
	// Dir holds every server's root directory, the certificates and the
	// kubeconfigs. Required.
	Dir string
	// Shards is the number of kcp shards (default 2); shard 0 is root.
	Shards int
	// Env are extra environment variables ("K=V") of every server.
	Env []string
	// ReadyTimeout bounds each server's wait for /readyz (default DefaultReadyTimeout).
	ReadyTimeout time.Duration
	// Progress receives a line per server when it is ready; nil discards.
	Progress func(format string, args ...any)
}

// Component is one running server of the topology.
type Component struct {
	*process.Process
	// Name is "cache-server", "shard-0", "vw-0" or "front-proxy".
	Name string
	// Dir is its root directory; its output is also in Dir/output.log.
	Dir string
	// URL is https://127.0.0.1:PORT.
	URL       string
	StartedIn time.Duration
	log       *os.File
}

// Topology is a running sharded kcp.
type Topology struct {
	opts  Options
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

// Start lays out the certificates and starts the cache server, the shards
// (root first), the virtual workspaces and the front-proxy, waiting for each
// server's /readyz before the next that needs it. On an error it stops what
// it started.
func Start(ctx context.Context, opts Options) (t *Topology, err error) {
	if opts.Dir == "" {
		return nil, errors.New("shardedkcp: Options.Dir is required")
	}
	for _, b := range opts.Binaries.All() {
		if b == "" {
			return nil, errors.New("shardedkcp: Options.Binaries names no binary for one of the servers")
		}
		if _, err := os.Stat(b); err != nil {
			return nil, fmt.Errorf("shardedkcp: %w (build the sharded servers with `make sharded KCP_SOURCE=...`)", err)
		}
	}
	if opts.Shards <= 0 {
		opts.Shards = 2
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
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
	free, err := kcpserver.FreePorts(n)
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

func loopback(port int) string { return fmt.Sprintf("https://127.0.0.1:%d", port) }

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
// process.DefaultGrace after SIGTERM) does not hold up the rest.
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
	return t.shardAdmin(t.Shards[i].Dir, t.Shards[i].URL)
}

// CacheConfig is the cache server's client (system:masters) at its base
// URL; kcp's clients reach its data under /services/cache/shards/<shard>.
func (t *Topology) CacheConfig() *rest.Config { return t.cacheClient().restConfig() }

// startComponent runs one server and waits until /readyz answers 200 to cfg.
func (t *Topology) startComponent(ctx context.Context, name, dir, binary string, args []string, port int, cfg func() (*rest.Config, error)) (*Component, error) {
	log, err := os.Create(filepath.Join(dir, "output.log"))
	if err != nil {
		return nil, err
	}
	popts := process.Options{Path: binary, Args: args, Dir: dir, MergeStdout: true, StderrTee: log}
	if len(t.opts.Env) > 0 {
		popts.Env = append(os.Environ(), t.opts.Env...)
	}
	began := time.Now()
	p, err := process.Start(popts)
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &Component{Process: p, Name: name, Dir: dir, URL: loopback(port), log: log}
	if _, err := kcpserver.WaitReady(ctx, p, t.opts.ReadyTimeout, cfg); err != nil {
		_ = p.Stop()
		log.Close()
		msg := fmt.Sprintf("%s (%s): %v", name, binary, err)
		if f := p.Fatal(); f != nil {
			msg += "\n" + f.String()
		}
		return nil, fmt.Errorf("%s\n%s output (last lines, all in %s):\n%s", msg, name, log.Name(), process.TailLines(p.Stderr(), 30))
	}
	c.StartedIn = time.Since(began)
	t.opts.Progress("%s ready on %s after %s (pid %d)", name, c.URL, c.StartedIn.Round(time.Millisecond), p.PID())
	return c, nil
}
