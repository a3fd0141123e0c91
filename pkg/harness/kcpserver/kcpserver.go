// Package kcpserver runs a real kcp (`kcp start`) as a child process through
// pkg/harness/process: loopback only, in a root directory that outlives the process so
// a second Start on the same directory is a restart of the same shard (same
// embedded etcd, same admin token).
package kcpserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kcp-carry/kcp-carry/pkg/harness/process"
)

// DefaultReadyTimeout bounds the wait for /readyz.
const DefaultReadyTimeout = 3 * time.Minute

// Options say which kcp to run where.
type Options struct {
	// Binary is the kcp binary. Required.
	Binary string
	// RootDir is kcp's --root-directory. Required; Stop leaves it, so a
	// later Start on it restarts the same shard.
	RootDir string
	// Args are extra flags for `kcp start`.
	Args []string
	// DefaultBatteries leaves --batteries-included out, so kcp runs with its
	// default batteries (workspace-types and admin), as kcp's own e2e
	// servers do; otherwise only the admin battery.
	DefaultBatteries bool
	// Env are extra environment variables ("K=V") on top of this process's.
	Env []string
	// ReadyTimeout bounds the wait for /readyz (default DefaultReadyTimeout).
	ReadyTimeout time.Duration
	// StderrTee receives a copy of kcp's output as it is written.
	StderrTee io.Writer
	// Progress receives a line when kcp is ready; nil discards.
	Progress func(format string, args ...any)
}

// Server is a running kcp.
type Server struct {
	*process.Process
	opts Options
	port int
	cfg  *rest.Config
	// StartedIn is how long kcp took from exec to /readyz.
	StartedIn time.Duration
}

// Start runs `kcp start --root-directory=RootDir --bind-address=127.0.0.1
// --batteries-included=admin` (kcp's defaults with DefaultBatteries) on free ports and waits until /readyz answers
// 200 with the shard admin's credentials from RootDir/admin.kubeconfig (kcp
// writes it at start; the token survives restarts).
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Binary == "" || opts.RootDir == "" {
		return nil, fmt.Errorf("kcpserver: Options.Binary and Options.RootDir are required")
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if err := os.MkdirAll(opts.RootDir, 0o755); err != nil {
		return nil, err
	}
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	args := append([]string{"start",
		"--root-directory=" + opts.RootDir,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", ports[0]),
		fmt.Sprintf("--embedded-etcd-client-port=%d", ports[1]),
		fmt.Sprintf("--embedded-etcd-peer-port=%d", ports[2]),
	}, opts.Args...)
	if !opts.DefaultBatteries {
		args = append(args, "--batteries-included=admin")
	}
	popts := process.Options{Path: opts.Binary, Args: args, Dir: opts.RootDir, MergeStdout: true}
	if len(opts.Env) > 0 {
		popts.Env = append(os.Environ(), opts.Env...)
	}
	if opts.StderrTee != nil {
		popts.StderrTee = opts.StderrTee
	}
	began := time.Now()
	p, err := process.Start(popts)
	if err != nil {
		return nil, err
	}
	s := &Server{Process: p, opts: opts, port: ports[0]}
	if err := s.waitReady(ctx); err != nil {
		_ = p.Stop()
		msg := err.Error()
		if f := p.Fatal(); f != nil {
			msg += "\n" + f.String()
		}
		return nil, fmt.Errorf("%s\nkcp output (last lines):\n%s", msg, process.TailLines(p.Stderr(), 40))
	}
	s.StartedIn = time.Since(began)
	if opts.Progress != nil {
		opts.Progress("kcp %s ready on https://127.0.0.1:%d after %s (root %s)", opts.Binary, s.port, s.StartedIn.Round(time.Millisecond), opts.RootDir)
	}
	return s, nil
}

func (s *Server) waitReady(ctx context.Context) error {
	cfg, err := WaitReady(ctx, s.Process, s.opts.ReadyTimeout, s.loadConfig)
	if err != nil {
		return fmt.Errorf("kcp %w", err)
	}
	s.cfg = cfg
	return nil
}

// WaitReady polls /readyz of the server p runs with the config cfg returns
// (asked again each time: a server may write its credentials late) until it
// answers 200, p exits, timeout passes or ctx ends; it returns the config
// that got the 200.
func WaitReady(ctx context.Context, p *process.Process, timeout time.Duration, cfg func() (*rest.Config, error)) (*rest.Config, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-p.Done():
			return nil, fmt.Errorf("exited before it was ready: %v", p.ExitError())
		case <-deadline.C:
			return nil, fmt.Errorf("not ready after %s: %v", timeout, last)
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for /readyz: %w", ctx.Err())
		case <-tick.C:
		}
		c, err := cfg()
		if err != nil {
			last = err
			continue
		}
		if last = Readyz(ctx, c); last == nil {
			return c, nil
		}
	}
}

// loadConfig reads the shard admin's credentials (context shard-base) and
// points them at this process's port: after a restart the file may still
// name the previous one until kcp rewrites it.
func (s *Server) loadConfig() (*rest.Config, error) {
	return s.contextConfig("shard-base")
}

// contextConfig is the admin.kubeconfig's context at this process's port.
func (s *Server) contextConfig(context string) (*rest.Config, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: s.KubeconfigPath()},
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.Host = fmt.Sprintf("https://127.0.0.1:%d", s.port)
	cfg.QPS = -1
	cfg.UserAgent = "kcp-carry"
	return cfg, nil
}

// Readyz GETs /readyz of cfg's host and wants 200.
func Readyz(ctx context.Context, cfg *rest.Config) error {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s", resp.Status)
	}
	return nil
}

// KubeconfigPath is the admin.kubeconfig kcp wrote in its root directory.
func (s *Server) KubeconfigPath() string { return filepath.Join(s.opts.RootDir, "admin.kubeconfig") }

// RootDir is kcp's root directory.
func (s *Server) RootDir() string { return s.opts.RootDir }

// URL is https://127.0.0.1:PORT.
func (s *Server) URL() string { return s.cfg.Host }

// Config is the shard admin's config for the base URL (no /clusters/
// prefix), client-side rate limiting off.
func (s *Server) Config() *rest.Config { return rest.CopyConfig(s.cfg) }

// ClusterConfig is Config for /clusters/<name>; "*" is the wildcard.
func (s *Server) ClusterConfig(name string) *rest.Config {
	c := s.Config()
	c.Host = strings.TrimSuffix(c.Host, "/") + "/clusters/" + name
	return c
}

// FreePorts reserves n distinct loopback ports and releases them for a
// server to bind.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
