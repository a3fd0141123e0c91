package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kcp-carry/kcp-carry/pkg/harness/cachemutation"
)

// ShardReadyTimeout is the default bound of the wait for a test shard's
// ready line.
const ShardReadyTimeout = 2 * time.Minute

// ShardOptions configure a test shard child process.
type ShardOptions struct {
	// Binary is the cmd/testshard binary (see ShardBuilder). Required.
	Binary string
	// DisableWatchCache runs the shard with --watch-cache=false (the
	// control: LISTs are served from etcd). The default is kcp's setting,
	// the watch cache on.
	DisableWatchCache bool
	// Args are extra command-line flags for the shard.
	Args []string
	// Env are extra environment variables ("K=V") on top of this process's.
	Env []string
	// ReadyTimeout bounds the wait for the ready line (default ShardReadyTimeout).
	ReadyTimeout time.Duration
	// KeepDir keeps the shard's directory (etcd data, certs, kubeconfig)
	// after Stop, for debugging.
	KeepDir bool
	// StderrTee, if set, receives a copy of the shard's stderr as it is
	// written.
	StderrTee io.Writer

	// CacheMutationDetector runs the shard with the watch-cache mutation
	// detector (pkg/harness/cachemutation) on, through
	// KCP_CARRY_CACHE_MUTATION_DETECTOR=true. StartShard fails if the binary
	// does not report it on. In servertest.StartShard this is a test mode:
	// any finding (CacheMutationFindings) fails the test at cleanup, unless
	// ExpectCacheMutations is set.
	CacheMutationDetector bool
	// ExpectCacheMutations: the test asserts on findings itself (a
	// positive control); servertest.StartShard does not fail on them.
	ExpectCacheMutations bool
}

// shardReadyLine is what cmd/testshard prints on stdout once it serves.
type shardReadyLine struct {
	URL        string `json:"url"`
	Kubeconfig string `json:"kubeconfig"`
	CAFile     string `json:"caFile"`
	RootDir    string `json:"rootDir"`
	WatchCache bool   `json:"watchCache"`
	PID        int    `json:"pid"`

	CacheMutationDetector bool `json:"cacheMutationDetector"`
}

// Shard is a running test shard child process: a test shard built from
// kcp's fork, not kcp.
type Shard struct {
	*Server
	opts  ShardOptions
	dir   string
	ready shardReadyLine

	stopOnce sync.Once
	stopErr  error
}

// StartShard runs the shard binary in a new temporary directory and waits
// (at most ReadyTimeout, and not past ctx) until it prints its ready line.
// ctx only bounds the start; the shard runs until Stop.
func StartShard(ctx context.Context, opts ShardOptions) (*Shard, error) {
	// Start checks the binary itself; an empty one gets a hint.
	if opts.Binary == "" {
		return nil, errors.New("server.ShardOptions.Binary is empty: build the shard with a ShardBuilder first")
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = ShardReadyTimeout
	}

	dir, err := os.MkdirTemp("", "kcp-carry-shard-")
	if err != nil {
		return nil, fmt.Errorf("the test shard's directory: %w", err)
	}
	s := &Shard{opts: opts, dir: dir}

	args := []string{
		"--root-dir=" + dir,
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		fmt.Sprintf("--watch-cache=%t", !opts.DisableWatchCache),
		"--etcd-unsafe-no-fsync",
	}
	args = append(args, opts.Args...)
	env := append(os.Environ(), opts.Env...)
	if opts.CacheMutationDetector {
		env = append(env, cachemutation.EnvVar+"=true")
	}
	stdout, stdoutW := io.Pipe()
	s.Server, err = Start(Command{Path: opts.Binary, Args: args, Dir: dir, Env: env, Stdout: stdoutW, StderrTee: opts.StderrTee})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	go func() {
		<-s.Done()
		stdoutW.Close()
	}()

	readyCh := make(chan shardReadyLine, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		sent := false
		for sc.Scan() {
			var r shardReadyLine
			if !sent && json.Unmarshal(sc.Bytes(), &r) == nil && r.URL != "" {
				readyCh <- r
				sent = true
			}
		}
	}()

	failure := s.waitReady(ctx, readiness{what: "test shard", timeout: opts.ReadyTimeout, interval: 50 * time.Millisecond,
		probe: func(context.Context) (*rest.Config, error) {
			select {
			case r := <-readyCh:
				s.ready = r
			default:
				return nil, errors.New("no ready line yet")
			}
			ca, err := os.ReadFile(s.ready.CAFile)
			if err != nil {
				// The line came once: fail rather than wait for another.
				return nil, probeFailed{fmt.Errorf("the test shard's CA: %w", err)}
			}
			return &rest.Config{
				Host:            s.ready.URL,
				TLSClientConfig: rest.TLSClientConfig{CAData: ca},
				// Load tests control their own rate.
				QPS:       -1,
				UserAgent: "kcp-carry-fixture",
			}, nil
		}})
	if failure == nil && opts.CacheMutationDetector && !s.ready.CacheMutationDetector {
		failure = fmt.Errorf("the test shard %s did not turn the cache mutation detector on (%s=true): rebuild it", opts.Binary, cachemutation.EnvVar)
	}
	if failure != nil {
		_ = s.Stop()
		return nil, startFailure(s.Server, failure, "stderr", 30)
	}
	return s, nil
}

// Stop asks the shard to shut down (Server.Stop) and removes its directory
// (unless KeepDir). It returns nil if the shard exited cleanly when asked,
// or had already exited on its own (see Died and ExitError). Calling it
// again returns the first result.
func (s *Shard) Stop() error {
	s.stopOnce.Do(func() {
		var errs []error
		if err := s.Server.Stop(); err != nil {
			errs = append(errs, err)
		}
		if !s.opts.KeepDir {
			if err := os.RemoveAll(s.dir); err != nil {
				errs = append(errs, fmt.Errorf("removing the test shard's directory: %w", err))
			}
		}
		s.stopErr = errors.Join(errs...)
		if len(errs) == 1 {
			s.stopErr = errs[0]
		}
	})
	return s.stopErr
}

// CacheMutationDetector tells whether the shard runs the cache mutation
// detector.
func (s *Shard) CacheMutationDetector() bool { return s.ready.CacheMutationDetector }

// CacheMutationFindings are the cache mutation detector's findings the
// shard wrote to stderr so far.
func (s *Shard) CacheMutationFindings() ([]cachemutation.Finding, error) {
	return cachemutation.ParseFindings(s.Stderr())
}

// Dir is the shard's directory (etcd data, certs, admin.kubeconfig).
func (s *Shard) Dir() string { return s.dir }

// WatchCache tells whether the shard serves through the watch cache.
func (s *Shard) WatchCache() bool { return s.ready.WatchCache }

// KubeconfigPath is admin.kubeconfig, with contexts "base" and "root".
func (s *Shard) KubeconfigPath() string { return s.ready.Kubeconfig }
