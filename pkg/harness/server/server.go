package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// DefaultGrace is how long Stop waits after SIGTERM before SIGKILL.
const DefaultGrace = 30 * time.Second

// Command says what to run.
type Command struct {
	// Path is the binary. Required.
	Path string
	Args []string
	// Dir is the working directory ("" is this process's).
	Dir string
	// Env is the child's whole environment; nil means os.Environ().
	Env []string
	// Stdout receives the child's stdout; nil discards it.
	Stdout io.Writer
	// MergeStdout captures stdout with stderr (kcp logs to both); Stdout is
	// ignored then.
	MergeStdout bool
	// StderrTee, if set, receives a copy of stderr as it is written.
	StderrTee io.Writer
	// Grace bounds the wait between SIGTERM and SIGKILL (default DefaultGrace).
	Grace time.Duration
}

// Server is a running (or exited) child process: every launcher's server
// (StartShard, StartKCP, StartTopology's components) is one, and so is the
// test binary kcpe2e runs. Its config is set once the launcher saw it ready.
type Server struct {
	opts   Command
	pid    int
	stderr lockedBuffer
	config *rest.Config // nil until ready

	done    chan struct{} // closed when the child has exited and been reaped
	exitErr error         // valid after done
	stop    context.CancelFunc

	mu       sync.Mutex
	asked    bool // Stop was called before the child exited
	stopOnce sync.Once
	stopErr  error
}

// Start runs the child. It returns once the child runs (or failed to start).
func Start(opts Command) (*Server, error) {
	if opts.Path == "" {
		return nil, errors.New("server: Command.Path is empty")
	}
	if st, err := os.Stat(opts.Path); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	} else if st.IsDir() {
		return nil, fmt.Errorf("server: %s is a directory", opts.Path)
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	// A relative path would be resolved against Dir by exec.
	if abs, err := filepath.Abs(opts.Path); err == nil {
		opts.Path = abs
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Server{opts: opts, done: make(chan struct{}), stop: stop}
	started := make(chan error, 1)
	// Pdeathsig fires when the thread that created the child exits, so the
	// child is started from a goroutine locked to its OS thread that stays
	// until the child is reaped.
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(s.done)

		cmd := exec.CommandContext(ctx, opts.Path, opts.Args...)
		// Stop cancels ctx: SIGTERM to the whole group, then, after the
		// grace period, SIGKILL to the child and its stderr pipe closed.
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
		cmd.WaitDelay = opts.Grace
		cmd.Dir = opts.Dir
		cmd.Env = opts.Env
		cmd.Stdout = opts.Stdout
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		cmd.Stderr = &s.stderr
		if opts.StderrTee != nil {
			cmd.Stderr = io.MultiWriter(&s.stderr, opts.StderrTee)
		}
		if opts.MergeStdout {
			cmd.Stdout = cmd.Stderr
		}
		if err := cmd.Start(); err != nil {
			s.exitErr = err
			started <- fmt.Errorf("starting %s: %w", opts.Path, err)
			return
		}
		s.pid = cmd.Process.Pid
		started <- nil
		s.exitErr = cmd.Wait()
		if errors.Is(s.exitErr, context.Canceled) {
			s.exitErr = nil // status 0 after SIGTERM: exec reports the cancellation
		}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return s, nil
}

// Stop asks the child to shut down (SIGTERM to its process group), kills the
// group after the grace period, and waits for it. It returns nil if the child
// exited with status 0 when asked or had already exited on its own (see Died
// and ExitError), an *UncleanExitError if it exited non-zero when asked (a
// -race build that saw a race exits 66). Calling it again returns the first
// result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		defer s.stop()
		s.mu.Lock()
		select {
		case <-s.done:
		default:
			s.asked = true
		}
		asked := s.asked
		s.mu.Unlock()

		if asked {
			askedAt := time.Now()
			s.stop()
			<-s.done
			switch {
			case s.exitErr == nil:
			case killed(s.exitErr) && time.Since(askedAt) >= s.opts.Grace:
				s.stopErr = fmt.Errorf("%s (pid %d) did not stop within %s of SIGTERM; killed", s.opts.Path, s.pid, s.opts.Grace)
			default:
				s.stopErr = &UncleanExitError{Path: s.opts.Path, PID: s.pid, Err: s.exitErr}
			}
		}
		<-s.done
		// Anything left in the group (there should be nothing) goes too.
		_ = syscall.Kill(-s.pid, syscall.SIGKILL)
	})
	return s.stopErr
}

// killed says whether err is the exit of a process killed by SIGKILL.
func killed(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// UncleanExitError is Stop's error when the child exited on SIGTERM with a
// non-zero status.
type UncleanExitError struct {
	Path string
	PID  int
	Err  error
}

func (e *UncleanExitError) Error() string {
	return fmt.Sprintf("%s (pid %d) exited uncleanly after SIGTERM: %v", e.Path, e.PID, e.Err)
}

func (e *UncleanExitError) Unwrap() error { return e.Err }

// Done is closed when the child has exited.
func (s *Server) Done() <-chan struct{} { return s.done }

// ExitError is the child's exit error (nil while it runs or after status 0).
func (s *Server) ExitError() error {
	select {
	case <-s.done:
		return s.exitErr
	default:
		return nil
	}
}

// Died reports whether the child exited without being asked to (a crash).
func (s *Server) Died() bool {
	select {
	case <-s.done:
	default:
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.asked
}

// PID is the child's process id (also its process group id).
func (s *Server) PID() int { return s.pid }

// Stderr is everything the child wrote to stderr so far.
func (s *Server) Stderr() string { return s.stderr.String() }

// Fatal is the first fatal runtime error or race report in Stderr, or nil.
func (s *Server) Fatal() *Fatal { return ParseFatal(s.Stderr()) }

// Config is the client config the launcher saw the server ready with, at its
// base URL (no /clusters/ prefix); nil for a child no launcher waited for.
func (s *Server) Config() *rest.Config {
	if s.config == nil {
		return nil
	}
	return rest.CopyConfig(s.config)
}

// URL is the server's base URL, https://127.0.0.1:PORT ("" before it was ready).
func (s *Server) URL() string {
	if s.config == nil {
		return ""
	}
	return s.config.Host
}

// ClusterConfig is Config for /clusters/<name>; "*" is the wildcard.
func (s *Server) ClusterConfig(name string) *rest.Config {
	c := s.Config()
	if c == nil {
		return nil
	}
	c.Host = strings.TrimSuffix(c.Host, "/") + "/clusters/" + name
	return c
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers and readers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(data []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(data)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TailLines is the last n lines of s.
func TailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
