package shardserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kcp-carry/kcp-carry/pkg/harness/cachemutation"
	"github.com/kcp-carry/kcp-carry/pkg/harness/process"
)

// Environment variables read by Start.
const (
	// EnvReadyTimeout overrides Options.ReadyTimeout (a Go duration).
	EnvReadyTimeout = "KCP_CARRY_SHARD_READY_TIMEOUT"
	// EnvKeepDir=1 keeps every shard's directory (etcd data, certs,
	// kubeconfig) after Stop, for debugging.
	EnvKeepDir = "KCP_CARRY_SHARD_KEEP_DIR"
	// EnvVerbose=1 copies every shard's stderr to the test process's stderr
	// as it is written.
	EnvVerbose = "KCP_CARRY_SHARD_VERBOSE"
)

const (
	defaultReadyTimeout = 2 * time.Minute
)

// Options configure a test shard child process.
type Options struct {
	// Binary is the cmd/testshard binary (see BuildShard). Required.
	Binary string
	// DisableWatchCache runs the shard with --watch-cache=false (the
	// control: LISTs are served from etcd). The default is kcp's setting,
	// the watch cache on.
	DisableWatchCache bool
	// Args are extra command-line flags for the shard.
	Args []string
	// Env are extra environment variables ("K=V") on top of this process's.
	Env []string
	// ReadyTimeout bounds the wait for the ready line (default 2m,
	// KCP_CARRY_SHARD_READY_TIMEOUT overrides).
	ReadyTimeout time.Duration
	// KeepDir keeps the shard's directory after Stop (also KCP_CARRY_SHARD_KEEP_DIR=1).
	KeepDir bool
	// StderrTee, if set, receives a copy of the shard's stderr as it is
	// written (KCP_CARRY_SHARD_VERBOSE=1 sets it to os.Stderr).
	StderrTee io.Writer

	// CacheMutationDetector runs the shard with the watch-cache mutation
	// detector (pkg/harness/cachemutation) on, through
	// KCP_CARRY_CACHE_MUTATION_DETECTOR=true. Start fails if the binary
	// does not report it on. In StartT this is a test mode: any finding
	// (CacheMutationFindings) fails the test at cleanup, unless
	// ExpectCacheMutations is set.
	CacheMutationDetector bool
	// ExpectCacheMutations: the test asserts on findings itself (a
	// positive control); StartT does not fail on them.
	ExpectCacheMutations bool
}

// readyLine is what cmd/testshard prints on stdout once it serves.
type readyLine struct {
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
	opts  Options
	dir   string
	ready readyLine
	ca    []byte
	proc  *process.Process

	stopOnce sync.Once
	stopErr  error
}

// Start runs the shard binary in a new temporary directory and waits (at
// most ReadyTimeout, and not past ctx) until it prints its ready line. ctx
// only bounds the start; the shard runs until Stop. The child runs in its own
// process group and gets SIGKILL if this process dies.
func Start(ctx context.Context, opts Options) (*Shard, error) {
	if opts.Binary == "" {
		return nil, errors.New("fixture.Options.Binary is empty: build the shard with fixture.BuildShard first")
	}
	if st, err := os.Stat(opts.Binary); err != nil {
		return nil, fmt.Errorf("fixture.Options.Binary: %w", err)
	} else if st.IsDir() {
		return nil, fmt.Errorf("fixture.Options.Binary %s is a directory", opts.Binary)
	}
	timeout := opts.ReadyTimeout
	if v := os.Getenv(EnvReadyTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %w", EnvReadyTimeout, v, err)
		}
		timeout = d
	}
	if timeout <= 0 {
		timeout = defaultReadyTimeout
	}
	if os.Getenv(EnvKeepDir) == "1" {
		opts.KeepDir = true
	}
	if opts.StderrTee == nil && os.Getenv(EnvVerbose) == "1" {
		opts.StderrTee = os.Stderr
	}

	dir, err := os.MkdirTemp("", "kcp-carry-shard-")
	if err != nil {
		return nil, err
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
	s.proc, err = process.Start(process.Options{Path: opts.Binary, Args: args, Dir: dir, Env: env, Stdout: stdoutW, StderrTee: opts.StderrTee})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	go func() {
		<-s.proc.Done()
		stdoutW.Close()
	}()

	readyCh := make(chan readyLine, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		sent := false
		for sc.Scan() {
			var r readyLine
			if !sent && json.Unmarshal(sc.Bytes(), &r) == nil && r.URL != "" {
				readyCh <- r
				sent = true
			}
		}
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var failure error
	select {
	case r := <-readyCh:
		s.ready = r
	case <-s.proc.Done():
		failure = fmt.Errorf("test shard exited before it was ready: %v", s.proc.ExitError())
	case <-timer.C:
		failure = fmt.Errorf("test shard not ready after %s", timeout)
	case <-ctx.Done():
		failure = fmt.Errorf("waiting for the test shard: %w", ctx.Err())
	}
	if failure == nil {
		s.ca, failure = os.ReadFile(s.ready.CAFile)
	}
	if failure == nil && opts.CacheMutationDetector && !s.ready.CacheMutationDetector {
		failure = fmt.Errorf("the test shard %s did not turn the cache mutation detector on (%s=true): rebuild it", opts.Binary, cachemutation.EnvVar)
	}
	if failure != nil {
		_ = s.Stop()
		msg := failure.Error()
		if f := s.Fatal(); f != nil {
			msg += "\n" + f.String()
		}
		return nil, fmt.Errorf("%s\nstderr (last lines):\n%s", msg, process.TailLines(s.Stderr(), 30))
	}
	return s, nil
}

// Stop asks the shard to shut down (SIGTERM to its process group), kills the
// group after a grace period, waits for the process, and removes its
// directory (unless KeepDir). It returns nil if the shard exited cleanly when
// asked, or had already exited on its own (see Died and ExitError). Calling
// it again returns the first result.
func (s *Shard) Stop() error {
	s.stopOnce.Do(func() {
		var errs []error
		if err := s.proc.Stop(); err != nil {
			errs = append(errs, err)
		}
		if !s.opts.KeepDir {
			if err := os.RemoveAll(s.dir); err != nil {
				errs = append(errs, err)
			}
		}
		s.stopErr = errors.Join(errs...)
		if len(errs) == 1 {
			s.stopErr = errs[0]
		}
	})
	return s.stopErr
}

// UncleanExitError is Stop's error when the shard exited on SIGTERM with a
// non-zero status; a -race build that reported a race exits with 66.
type UncleanExitError = process.UncleanExitError

// CacheMutationDetector tells whether the shard runs the cache mutation
// detector.
func (s *Shard) CacheMutationDetector() bool { return s.ready.CacheMutationDetector }

// CacheMutationFindings are the cache mutation detector's findings the
// shard wrote to stderr so far.
func (s *Shard) CacheMutationFindings() ([]cachemutation.Finding, error) {
	return cachemutation.ParseFindings(s.Stderr())
}

// Done is closed when the shard process has exited.
func (s *Shard) Done() <-chan struct{} { return s.proc.Done() }

// ExitError is the process's exit error (nil while it runs or after exit
// status 0; an *exec.ExitError otherwise).
func (s *Shard) ExitError() error { return s.proc.ExitError() }

// Died reports whether the shard exited without being asked to (crash).
func (s *Shard) Died() bool { return s.proc.Died() }

// Stderr is everything the shard wrote to stderr so far.
func (s *Shard) Stderr() string { return s.proc.Stderr() }

// Fatal is the first fatal runtime error or race report in Stderr, or nil.
func (s *Shard) Fatal() *process.Fatal { return s.proc.Fatal() }

// PID is the shard's process id (also its process group id).
func (s *Shard) PID() int { return s.proc.PID() }

// Dir is the shard's directory (etcd data, certs, admin.kubeconfig).
func (s *Shard) Dir() string { return s.dir }

// URL is the base URL, https://127.0.0.1:PORT.
func (s *Shard) URL() string { return s.ready.URL }

// WatchCache tells whether the shard serves through the watch cache.
func (s *Shard) WatchCache() bool { return s.ready.WatchCache }

// KubeconfigPath is admin.kubeconfig, with contexts "base" and "root".
func (s *Shard) KubeconfigPath() string { return s.ready.Kubeconfig }

// RESTConfig is a config for the base URL (no /clusters/ prefix) trusting
// the shard's CA. Client-side rate limiting is off (QPS -1): load tests
// control their own rate.
func (s *Shard) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            s.ready.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), s.ca...)},
		QPS:             -1,
		UserAgent:       "kcp-carry-fixture",
	}
}

// ClusterConfig is RESTConfig for /clusters/<name>; "*" is the wildcard.
func (s *Shard) ClusterConfig(name string) *rest.Config {
	c := s.RESTConfig()
	c.Host = strings.TrimSuffix(c.Host, "/") + "/clusters/" + name
	return c
}
