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
	p := &Server{opts: opts, done: make(chan struct{}), stop: stop}
	started := make(chan error, 1)
	// Pdeathsig fires when the thread that created the child exits, so the
	// child is started from a goroutine locked to its OS thread that stays
	// until the child is reaped.
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(p.done)

		cmd := exec.CommandContext(ctx, opts.Path, opts.Args...)
		// Stop cancels ctx: SIGTERM to the whole group, then, after the
		// grace period, SIGKILL to the child and its stderr pipe closed.
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
		cmd.WaitDelay = opts.Grace
		cmd.Dir = opts.Dir
		cmd.Env = opts.Env
		cmd.Stdout = opts.Stdout
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		cmd.Stderr = &p.stderr
		if opts.StderrTee != nil {
			cmd.Stderr = io.MultiWriter(&p.stderr, opts.StderrTee)
		}
		if opts.MergeStdout {
			cmd.Stdout = cmd.Stderr
		}
		if err := cmd.Start(); err != nil {
			p.exitErr = err
			started <- fmt.Errorf("starting %s: %w", opts.Path, err)
			return
		}
		p.pid = cmd.Process.Pid
		started <- nil
		p.exitErr = cmd.Wait()
		if errors.Is(p.exitErr, context.Canceled) {
			p.exitErr = nil // status 0 after SIGTERM: exec reports the cancellation
		}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// Stop asks the child to shut down (SIGTERM to its process group), kills the
// group after the grace period, and waits for it. It returns nil if the child
// exited with status 0 when asked or had already exited on its own (see Died
// and ExitError), an *UncleanExitError if it exited non-zero when asked (a
// -race build that saw a race exits 66). Calling it again returns the first
// result.
func (p *Server) Stop() error {
	p.stopOnce.Do(func() {
		defer p.stop()
		p.mu.Lock()
		select {
		case <-p.done:
		default:
			p.asked = true
		}
		asked := p.asked
		p.mu.Unlock()

		if asked {
			askedAt := time.Now()
			p.stop()
			<-p.done
			switch {
			case p.exitErr == nil:
			case killed(p.exitErr) && time.Since(askedAt) >= p.opts.Grace:
				p.stopErr = fmt.Errorf("%s (pid %d) did not stop within %s of SIGTERM; killed", p.opts.Path, p.pid, p.opts.Grace)
			default:
				p.stopErr = &UncleanExitError{Path: p.opts.Path, PID: p.pid, Err: p.exitErr}
			}
		}
		<-p.done
		// Anything left in the group (there should be nothing) goes too.
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	})
	return p.stopErr
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
func (p *Server) Done() <-chan struct{} { return p.done }

// ExitError is the child's exit error (nil while it runs or after status 0).
func (p *Server) ExitError() error {
	select {
	case <-p.done:
		return p.exitErr
	default:
		return nil
	}
}

// Died reports whether the child exited without being asked to (a crash).
func (p *Server) Died() bool {
	select {
	case <-p.done:
	default:
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.asked
}

// PID is the child's process id (also its process group id).
func (p *Server) PID() int { return p.pid }

// Stderr is everything the child wrote to stderr so far.
func (p *Server) Stderr() string { return p.stderr.String() }

// Fatal is the first fatal runtime error or race report in Stderr, or nil.
func (p *Server) Fatal() *Fatal { return ParseFatal(p.Stderr()) }

// Config is the client config the launcher saw the server ready with, at its
// base URL (no /clusters/ prefix); nil for a child no launcher waited for.
func (p *Server) Config() *rest.Config {
	if p.config == nil {
		return nil
	}
	return rest.CopyConfig(p.config)
}

// URL is the server's base URL, https://127.0.0.1:PORT ("" before it was ready).
func (p *Server) URL() string {
	if p.config == nil {
		return ""
	}
	return p.config.Host
}

// ClusterConfig is Config for /clusters/<name>; "*" is the wildcard.
func (p *Server) ClusterConfig(name string) *rest.Config {
	c := p.Config()
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
