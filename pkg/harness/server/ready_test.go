package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func sleeper(t *testing.T) *Server {
	t.Helper()
	s, err := Start(Command{Path: "/bin/sleep", Args: []string{"60"}, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

func TestWaitReadySetsConfig(t *testing.T) {
	s := sleeper(t)
	calls := 0
	err := s.waitReady(context.Background(), readiness{what: "sleeper", timeout: 10 * time.Second, interval: 10 * time.Millisecond,
		probe: func(context.Context) (*rest.Config, error) {
			if calls++; calls < 3 {
				return nil, errors.New("not yet")
			}
			return &rest.Config{Host: "https://127.0.0.1:1"}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 3 || s.URL() != "https://127.0.0.1:1" || s.ClusterConfig("*").Host != "https://127.0.0.1:1/clusters/*" {
		t.Errorf("after %d probes: URL %q, ClusterConfig(*) %q", calls, s.URL(), s.ClusterConfig("*").Host)
	}
}

func TestWaitReadyFailures(t *testing.T) {
	notYet := func(context.Context) (*rest.Config, error) { return nil, errors.New("no answer yet") }
	for _, c := range []struct {
		name    string
		args    []string
		timeout time.Duration
		probe   func(context.Context) (*rest.Config, error)
		want    []string
	}{
		// A timeout a busy machine cannot reach before the shell exits.
		{"exits", []string{"-c", "exit 3"}, time.Minute, notYet, []string{"sleeper exited before it was ready", "exit status 3"}},
		{"times out", []string{"-c", "sleep 60"}, 300 * time.Millisecond, notYet, []string{"sleeper not ready after 300ms", "no answer yet"}},
		{"probe fails for good", []string{"-c", "sleep 60"}, time.Minute,
			func(context.Context) (*rest.Config, error) { return nil, probeFailed{errors.New("unreadable CA")} }, []string{"unreadable CA"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Start(Command{Path: "/bin/sh", Args: c.args, Grace: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Stop()
			began := time.Now()
			err = s.waitReady(context.Background(), readiness{what: "sleeper", timeout: c.timeout, interval: 20 * time.Millisecond, probe: c.probe})
			if err == nil {
				t.Fatal("waitReady = nil")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("waitReady = %q, want it to say %q", err, w)
				}
			}
			if d := time.Since(began); d > 30*time.Second {
				t.Errorf("waitReady took %s", d)
			}
			if s.Config() != nil {
				t.Errorf("Config() = %v for a server never ready", s.Config())
			}
		})
	}
}

func TestWaitReadyCancelled(t *testing.T) {
	s := sleeper(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.waitReady(ctx, readiness{what: "sleeper", timeout: time.Minute, interval: 10 * time.Millisecond,
		probe: func(context.Context) (*rest.Config, error) { return nil, errors.New("no") }})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "waiting for sleeper") {
		t.Errorf("waitReady(cancelled) = %v, want context.Canceled named", err)
	}
}
