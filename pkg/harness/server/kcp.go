package server

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
)

// KCPReadyTimeout is the default bound of the wait for kcp's /readyz.
const KCPReadyTimeout = 3 * time.Minute

// KCPOptions say which kcp to run where.
type KCPOptions struct {
	// Binary is the kcp binary. Required.
	Binary string
	// RootDir is kcp's --root-directory. Required; Stop leaves it, so a
	// later StartKCP on it restarts the same shard.
	RootDir string
	// Args are extra flags for `kcp start`.
	Args []string
	// DefaultBatteries leaves --batteries-included out, so kcp runs with its
	// default batteries (workspace-types and admin), as kcp's own e2e
	// servers do; otherwise only the admin battery.
	DefaultBatteries bool
	// Env are extra environment variables ("K=V") on top of this process's.
	Env []string
	// ReadyTimeout bounds the wait for /readyz (default KCPReadyTimeout).
	ReadyTimeout time.Duration
	// StderrTee receives a copy of kcp's output as it is written.
	StderrTee io.Writer
	// Progress receives a line when kcp is ready; nil discards.
	Progress func(format string, args ...any)
}

// KCP is a running single kcp (`kcp start`).
type KCP struct {
	*Server
	opts KCPOptions
	port int
	// StartedIn is how long kcp took from exec to /readyz.
	StartedIn time.Duration
}

// Binary is the kcp binary this server runs.
func (k *KCP) Binary() string { return k.opts.Binary }

// StartKCP runs `kcp start --root-directory=RootDir --bind-address=127.0.0.1
// --batteries-included=admin` (kcp's defaults with DefaultBatteries) on free
// ports and waits until /readyz answers 200 with the shard admin's
// credentials from RootDir/admin.kubeconfig (kcp writes it at start; the
// token survives restarts).
func StartKCP(ctx context.Context, opts KCPOptions) (*KCP, error) {
	if opts.Binary == "" || opts.RootDir == "" {
		return nil, fmt.Errorf("server: KCPOptions.Binary and KCPOptions.RootDir are required")
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = KCPReadyTimeout
	}
	if err := os.MkdirAll(opts.RootDir, 0o755); err != nil {
		return nil, fmt.Errorf("kcp's root directory: %w", err)
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
	cmd := Command{Path: opts.Binary, Args: args, Dir: opts.RootDir, MergeStdout: true, StderrTee: opts.StderrTee}
	if len(opts.Env) > 0 {
		cmd.Env = append(os.Environ(), opts.Env...)
	}
	began := time.Now()
	p, err := Start(cmd)
	if err != nil {
		return nil, err
	}
	s := &KCP{Server: p, opts: opts, port: ports[0]}
	// The shard admin's credentials (context shard-base), at this
	// process's port: after a restart the file may still name the previous
	// one until kcp rewrites it.
	shardAdmin := func() (*rest.Config, error) { return s.contextConfig("shard-base") }
	if err := p.waitReady(ctx, readiness{what: "kcp", timeout: opts.ReadyTimeout, interval: 500 * time.Millisecond, probe: readyzProbe(shardAdmin)}); err != nil {
		_ = p.Stop()
		return nil, startFailure(p, err, "kcp output", 40)
	}
	s.StartedIn = time.Since(began)
	if opts.Progress != nil {
		opts.Progress("kcp %s ready on %s after %s (root %s)", opts.Binary, s.URL(), s.StartedIn.Round(time.Millisecond), opts.RootDir)
	}
	return s, nil
}

// contextConfig is the admin.kubeconfig's context at this process's port.
func (s *KCP) contextConfig(context string) (*rest.Config, error) {
	return contextConfig(s.KubeconfigPath(), context, loopback(s.port))
}

// KubeconfigPath is the admin.kubeconfig kcp wrote in its root directory.
func (s *KCP) KubeconfigPath() string { return filepath.Join(s.opts.RootDir, "admin.kubeconfig") }

// RootDir is kcp's root directory.
func (s *KCP) RootDir() string { return s.opts.RootDir }
