// Package goprogress reports how far a long go build has got: the go command
// compiles for minutes without a word, so a caller asks it which packages are
// stale first (`go list -deps`, the count to compile) and then counts the
// package names `go build -v` prints as it compiles them.
package goprogress

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Intervals between progress lines: often on a terminal, every 30 s in a log
// (CI's), where a line a second would drown the output.
const (
	TerminalInterval = 5 * time.Second
	LogInterval      = 30 * time.Second
)

// Stale lists the packages among the dependencies of pkgs (and pkgs) that the
// go command would compile with buildFlags (e.g. -race, -trimpath) in dir,
// under env: the build cache does not hold them. The go command's stderr
// (on a cold module cache, a "go: downloading" line a module) goes to log.
func Stale(ctx context.Context, dir string, env []string, buildFlags []string, pkgs []string, log io.Writer) ([]string, error) {
	args := append([]string{"list", "-deps", "-f", "{{if .Stale}}{{.ImportPath}}{{end}}"}, buildFlags...)
	args = append(args, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, io.MultiWriter(&stderr, log)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return strings.Fields(stdout.String()), nil
}

// Meter counts the packages a `go build -v` (or `go test -c -v`) compiles:
// write the go command's stderr to it. Lines that name a package it expects
// are counted; every other line (errors, downloads) goes on to Out. Start
// prints a line at each interval until Stop.
type Meter struct {
	// Label says what is built, e.g. "go build ./cmd/kcp (carried)".
	Label string
	// Out receives the progress lines and the go command's other output.
	Out io.Writer
	// Interval between progress lines; 0 picks TerminalInterval when Out is
	// a terminal and LogInterval otherwise.
	Interval time.Duration

	mu       sync.Mutex
	expected map[string]bool
	compiled int
	began    time.Time
	partial  []byte
	stop     chan struct{}
	done     chan struct{}
}

// NewMeter expects the stale packages (Stale) to be compiled.
func NewMeter(label string, out io.Writer, stale []string) *Meter {
	m := &Meter{Label: label, Out: out, expected: make(map[string]bool, len(stale))}
	for _, p := range stale {
		m.expected[p] = true
	}
	return m
}

// Write takes the go command's stderr, line by line.
func (m *Meter) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.partial = append(m.partial, p...)
	for {
		i := bytes.IndexByte(m.partial, '\n')
		if i < 0 {
			break
		}
		line := string(m.partial[:i])
		m.partial = m.partial[i+1:]
		if m.expected[strings.TrimSpace(line)] {
			m.compiled++
			continue
		}
		if _, err := fmt.Fprintln(m.Out, line); err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// Start prints the first progress line and one every Interval until Stop.
func (m *Meter) Start() {
	interval := m.Interval
	if interval == 0 {
		interval = LogInterval
		if f, ok := m.Out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			interval = TerminalInterval
		}
	}
	m.began = time.Now()
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	fmt.Fprintf(m.Out, "%s: %d packages to compile (the rest are in the build cache)\n", m.Label, len(m.expected))
	go func() {
		defer close(m.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-tick.C:
				m.report("")
			}
		}
	}()
}

// Stop ends the progress lines with a last one saying how it ended.
func (m *Meter) Stop(err error) {
	if m.stop == nil {
		return
	}
	close(m.stop)
	<-m.done
	m.mu.Lock()
	if len(m.partial) > 0 {
		fmt.Fprintln(m.Out, string(m.partial))
		m.partial = nil
	}
	m.mu.Unlock()
	outcome := "done"
	if err != nil {
		outcome = "failed"
	}
	m.report(outcome + ", ")
}

// Compiled is how many of the expected packages have been compiled so far.
func (m *Meter) Compiled() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.compiled
}

func (m *Meter) report(prefix string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintf(m.Out, "%s: %s%d of %d packages compiled, %s elapsed\n", m.Label, prefix, m.compiled, len(m.expected), time.Since(m.began).Round(time.Second))
}
