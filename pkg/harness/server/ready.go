package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// readiness says how a launcher sees that its server is ready.
type readiness struct {
	// what names the server in errors ("test shard", "kcp", "shard-1").
	what    string
	timeout time.Duration
	// interval between probes.
	interval time.Duration
	// probe returns the client config of a ready server, or why it is not
	// ready yet.
	probe func(ctx context.Context) (*rest.Config, error)
}

// waitReady probes until the server is ready, the server exits, r.timeout
// passes or ctx ends; the config the probe returned becomes the server's.
func (s *Server) waitReady(ctx context.Context, r readiness) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, r.interval, r.timeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-s.Done():
			return false, fmt.Errorf("%s exited before it was ready: %v", r.what, s.ExitError())
		default:
		}
		cfg, err := r.probe(ctx)
		var final probeFailed
		if errors.As(err, &final) {
			return false, final.error
		}
		if err != nil {
			last = err
			return false, nil
		}
		s.config = cfg
		return true, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("waiting for %s to be ready: %w", r.what, ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s not ready after %s: %v", r.what, r.timeout, last)
	default:
		return err
	}
}

// probeFailed is a probe's error that no later probe can undo: waitReady
// returns it at once.
type probeFailed struct{ error }

// readyzProbe asks the config cfg returns (asked again each time: a server
// may write its credentials late) for /readyz.
func readyzProbe(cfg func() (*rest.Config, error)) func(context.Context) (*rest.Config, error) {
	return func(ctx context.Context) (*rest.Config, error) {
		c, err := cfg()
		if err != nil {
			return nil, err
		}
		if err := Readyz(ctx, c); err != nil {
			return nil, err
		}
		return c, nil
	}
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
			return nil, fmt.Errorf("reserving a loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// loopback is the base URL of a server on port of 127.0.0.1.
func loopback(port int) string { return fmt.Sprintf("https://127.0.0.1:%d", port) }

// startFailure is a launcher's error for a server that did not get ready:
// err, the fatal error in its output if any, and the output's last lines.
func startFailure(s *Server, err error, outputName string, lines int) error {
	msg := err.Error()
	if f := s.Fatal(); f != nil {
		msg += "\n" + f.String()
	}
	return fmt.Errorf("%s\n%s (last lines):\n%s", msg, outputName, TailLines(s.Stderr(), lines))
}
