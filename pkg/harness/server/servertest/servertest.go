// Package servertest wraps pkg/harness/server for tests, the way
// net/http/httptest wraps net/http:
//
//	bin := servertest.ShardBinary(t, server.ShardBuild{Pristine: true})
//	shard := servertest.StartShard(t, server.ShardOptions{Binary: bin})
//	cfg := shard.ClusterConfig("*") // https://127.0.0.1:PORT/clusters/*
//
// StartKCP, StartKCPWithWorkspaces and StartTopology do the same for a real
// kcp and the sharded topology: every server a test starts stops at cleanup,
// and a failed test logs the last lines of its output.
//
// It is the one place that reads the environment overrides a developer sets
// when a live test misbehaves (docs/harness.md):
//
//	KCP_CARRY_SHARD_VERBOSE=1        copy every test shard's stderr to the test's stderr as it is written
//	KCP_CARRY_SHARD_KEEP_DIR=1       keep every test shard's directory (etcd data, certs, kubeconfig) after Stop
//	KCP_CARRY_SHARD_READY_TIMEOUT=D  wait up to D (a Go duration) for a test shard's ready line
//	KCP_CARRY_SHARD_RACE=0           build the patched test shard without -race (PatchedShard; `make test` sets
//	                                 it, `make test-race` runs those tests with it)
//
// Commands never import it: `go list -deps ./cmd/...` shows no testing.
package servertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/util/reporoot"
)

// The environment overrides of StartShard.
const (
	EnvVerbose      = "KCP_CARRY_SHARD_VERBOSE"
	EnvKeepDir      = "KCP_CARRY_SHARD_KEEP_DIR"
	EnvReadyTimeout = "KCP_CARRY_SHARD_READY_TIMEOUT"
)

// StartShard starts a test shard for a test, with the environment overrides
// applied, and stops it in t.Cleanup. It fails the test if the shard does
// not start, or cannot be stopped or cleaned up. If the shard died on its
// own, or exited with a non-zero status when stopped (a -race build that saw
// a race exits 66), Cleanup only logs it with the fatal signature: the test
// decides whether that is a failure (Died, ExitError, Fatal).
func StartShard(t testing.TB, opts server.ShardOptions) *server.Shard {
	t.Helper()
	opts, err := withOverrides(opts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.StartShard(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting the test shard %s: %v", opts.Binary, err)
	}
	t.Cleanup(func() {
		if s.Died() {
			t.Logf("test shard (pid %d) died on its own: %v\n%s", s.PID(), s.ExitError(), s.Fatal())
		}
		if err := s.Stop(); err != nil {
			if _, unclean := err.(*server.UncleanExitError); unclean {
				t.Logf("%v\n%s", err, s.Fatal())
			} else {
				t.Errorf("stopping the test shard: %v", err)
			}
		}
		if s.CacheMutationDetector() {
			checkCacheMutations(t, s, opts.CacheMutationDetector && !opts.ExpectCacheMutations)
		}
		if t.Failed() {
			t.Logf("test shard stderr (last lines):\n%s", server.TailLines(s.Stderr(), 40))
		}
	})
	return s
}

// withOverrides applies the environment overrides to opts.
func withOverrides(opts server.ShardOptions) (server.ShardOptions, error) {
	if v := os.Getenv(EnvReadyTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return opts, fmt.Errorf("%s=%q: %w", EnvReadyTimeout, v, err)
		}
		opts.ReadyTimeout = d
	}
	if os.Getenv(EnvKeepDir) == "1" {
		opts.KeepDir = true
	}
	if opts.StderrTee == nil && os.Getenv(EnvVerbose) == "1" {
		opts.StderrTee = os.Stderr
	}
	return opts, nil
}

// checkCacheMutations reports the detector's findings after the shard
// stopped (its last comparison runs at shutdown): as test errors in test
// mode (fail), else in the log.
func checkCacheMutations(t testing.TB, s *server.Shard, fail bool) {
	t.Helper()
	fs, err := s.CacheMutationFindings()
	if err != nil {
		t.Errorf("reading the cache mutation detector's findings: %v", err)
		return
	}
	if len(fs) == 0 {
		return
	}
	var b strings.Builder
	for i, f := range fs {
		if i == 20 {
			fmt.Fprintf(&b, "  ... and %d more\n", len(fs)-i)
			break
		}
		fmt.Fprintf(&b, "  %s\n", f)
	}
	if fail {
		t.Errorf("the cache mutation detector reported %d read-path writes into the watch cache:\n%s", len(fs), b.String())
	} else {
		t.Logf("the cache mutation detector reported %d read-path writes into the watch cache:\n%s", len(fs), b.String())
	}
}

// EnvShardRace chooses whether PatchedShard is a -race build: anything but
// "0" (the default, unset) is.
const EnvShardRace = "KCP_CARRY_SHARD_RACE"

// PatchedShard is the build of the test shard with the carry that the live
// tests run: with -race unless KCP_CARRY_SHARD_RACE=0. The race build is the
// only one of the suite that compiles the fork and its dependencies with the
// race detector, so `make test` leaves it to `make test-race` (docs/ci.md).
func PatchedShard() server.ShardBuild {
	return server.ShardBuild{Race: os.Getenv(EnvShardRace) != "0"}
}

// shardBuilder is the test binary's one builder, so that each ShardBuild is
// linked once however many tests ask for it.
var shardBuilder = sync.OnceValues(func() (*server.ShardBuilder, error) {
	root, err := reporoot.Find(".")
	if err != nil {
		return nil, err
	}
	return &server.ShardBuilder{RepoRoot: root}, nil
})

// ShardBinary builds (once per test binary) the test shard b for a test;
// -short skips live tests. A patched build needs the carry's overlay:
// without it the test fails and names the command that makes it, so a plain
// `go test ./...` cannot pass on the pristine controls alone.
func ShardBinary(t testing.TB, b server.ShardBuild) string {
	t.Helper()
	if testing.Short() {
		t.Skip("live test shard: run without -short")
	}
	builder, err := shardBuilder()
	if err != nil {
		t.Fatal(err)
	}
	if !b.Pristine {
		for _, p := range []string{".overlay", "go.work"} {
			if _, err := os.Stat(filepath.Join(builder.RepoRoot, p)); err != nil {
				t.Fatalf("the %s test shard needs the carry's overlay (%s missing): run `make overlay` (bin/carry overlay) first", b, p)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	bin, err := builder.Build(ctx, b)
	if err != nil {
		t.Fatalf("building the %s test shard: %v", b, err)
	}
	return bin
}
