package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ShardBuild says how a test shard binary is built: against which fork, and
// whether with -race.
type ShardBuild struct {
	// Pristine builds with GOWORK=off: the fork exactly as kcp v0.32.3 ships
	// it. Otherwise the build uses the repo's go.work, which points at the
	// patched fork copies under .overlay/.
	Pristine bool
	// Race builds with -race.
	Race bool
}

// String is "pristine", "patched", "pristine-race" or "patched-race".
func (b ShardBuild) String() string {
	s := "patched"
	if b.Pristine {
		s = "pristine"
	}
	if b.Race {
		s += "-race"
	}
	return s
}

// ShardBuilder builds cmd/testshard binaries in a repository, each
// ShardBuild at most once; go's build cache makes a repeated build cheap,
// but linking still takes a while, so tests share one builder.
type ShardBuilder struct {
	// RepoRoot is the repository with cmd/testshard and go.work. Required.
	RepoRoot string
	// BinDir is where the binaries go, testshard-<build> (default
	// <RepoRoot>/bin/shards, gitignored; not bin/testshard, which is where
	// `make build` puts the patched cmd/testshard).
	BinDir string
	// Log receives the build's progress and go's output; nil is os.Stderr.
	Log io.Writer

	mu    sync.Mutex
	built map[ShardBuild]builtShard
}

type builtShard struct {
	path string
	err  error
}

// Build returns the path of a cmd/testshard binary built as b, running `go
// build` in RepoRoot into BinDir the first time. Builds of the same binary
// from several test processes are serialized by a file lock.
func (sb *ShardBuilder) Build(ctx context.Context, b ShardBuild) (string, error) {
	root, err := filepath.Abs(sb.RepoRoot)
	if err != nil {
		return "", fmt.Errorf("repo root %s: %w", sb.RepoRoot, err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("repo root %s: %w", root, err)
	}
	binDir := sb.BinDir
	if binDir == "" {
		binDir = filepath.Join(root, "bin", "shards")
	}
	binDir, err = filepath.Abs(binDir)
	if err != nil {
		return "", fmt.Errorf("shard bin dir %s: %w", sb.BinDir, err)
	}
	out := filepath.Join(binDir, "testshard-"+b.String())

	sb.mu.Lock()
	defer sb.mu.Unlock()
	if r, ok := sb.built[b]; ok {
		return r.path, r.err
	}
	err = sb.buildLocked(ctx, root, binDir, out, b)
	if ctx.Err() == nil {
		// Do not remember a build that was cut short by the caller.
		if sb.built == nil {
			sb.built = map[ShardBuild]builtShard{}
		}
		sb.built[b] = builtShard{path: out, err: err}
	}
	if err != nil {
		return "", err
	}
	return out, nil
}

func (sb *ShardBuilder) buildLocked(ctx context.Context, root, binDir, out string, b ShardBuild) error {
	log := sb.Log
	if log == nil {
		log = os.Stderr
	}
	// cgo only where the race detector needs it: without it the build shares
	// the compiled fork and its dependencies with kcp's own CGO_ENABLED=0
	// builds (carry build) in the build cache.
	cgo := "CGO_ENABLED=0"
	if b.Race {
		cgo = "CGO_ENABLED=1"
	}
	env := append(os.Environ(), cgo)
	if b.Pristine {
		env = append(env, "GOWORK=off")
	} else {
		work := filepath.Join(root, "go.work")
		if _, err := os.Stat(work); err != nil {
			return fmt.Errorf("the %s test shard builds against %s (the carry overlay), which is missing: create the overlay first, or use ShardBuild{Pristine: true}: %w", b, work, err)
		}
		env = append(env, "GOWORK="+work)
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return fmt.Errorf("shard bin dir %s: %w", binDir, err)
	}

	// Serialize with other processes (go test runs packages in parallel).
	lockPath := out + ".lock"
	lock, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("build lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", lockPath, err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()

	// -trimpath: the overlay lies in each clone's own .overlay/, and without
	// it every clone would compile the fork again (the directory is part of
	// the build cache's key). -w: no DWARF in a binary only tests run.
	args := []string{"build", "-trimpath", "-ldflags=-w", "-o", out}
	if b.Race {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/testshard")

	fmt.Fprintf(log, "server: building the %s test shard: %s (in %s)\n", b, "go "+strings.Join(args, " "), root)
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = env
	cmd.Stdout = log
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return fmt.Errorf("go build of the %s test shard: %w", b, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("go build of the %s test shard: %w", b, err)
	}
	var tail []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(log, "server: go build:", line)
		tail = append(tail, line)
		if len(tail) > 40 {
			tail = tail[1:]
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("go build of the %s test shard failed after %s: %w\n%s", b, time.Since(start).Round(time.Second), err, strings.Join(tail, "\n"))
	}
	fmt.Fprintf(log, "server: %s test shard ready in %s: %s\n", b, time.Since(start).Round(100*time.Millisecond), out)
	return nil
}
