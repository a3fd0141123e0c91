package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kcp-carry/kcp-carry/pkg/hammer"
	"github.com/kcp-carry/kcp-carry/test/fixture"
)

const kcpReadyTimeout = 3 * time.Minute

// kcpBinary is KCP_BINARY, else <repo>/bin/kcp (what `make kcp` builds
// against the overlay where kcp's module graph can be fetched).
func kcpBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("live kcp: run without -short")
	}
	if p := os.Getenv("KCP_BINARY"); p != "" {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			t.Fatalf("KCP_BINARY=%s: not a file (%v)", p, err)
		}
		return p
	}
	p := filepath.Join(repoRoot(t), "bin", "kcp")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no kcp binary: set KCP_BINARY to a kcp binary (a released kcp v0.32.3 with KCP_BINARY_VARIANT=pristine, "+
			"or one linked against the carry) or run `make kcp` where kcp's whole module graph can be fetched (%s is missing)", p)
	}
	return p
}

// lockedBuf collects a child's stderr.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// kcpProcess is `kcp start` in a temporary root directory on loopback.
type kcpProcess struct {
	cmd    *exec.Cmd
	stderr lockedBuf
	done   chan struct{}
	err    error
	dir    string
}

func startKCP(t *testing.T, bin string) (*kcpProcess, *rest.Config) {
	t.Helper()
	p := &kcpProcess{dir: t.TempDir(), done: make(chan struct{})}
	args := []string{"start",
		"--root-directory=" + p.dir,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", freePort(t)),
		fmt.Sprintf("--embedded-etcd-client-port=%d", freePort(t)),
		fmt.Sprintf("--embedded-etcd-peer-port=%d", freePort(t)),
		"--batteries-included=admin",
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = p.dir
	p.cmd.Stdout, p.cmd.Stderr = &p.stderr, &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("kcp output (last lines):\n%s", lastLines(p.stderr.String(), 40))
		}
	})

	kubeconfig := filepath.Join(p.dir, "admin.kubeconfig")
	deadline := time.Now().Add(kcpReadyTimeout)
	for {
		select {
		case <-p.done:
			t.Fatalf("kcp exited before it was ready: %v\n%s", p.err, lastLines(p.stderr.String(), 40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("kcp not ready after %s", kcpReadyTimeout)
		}
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig},
			&clientcmd.ConfigOverrides{CurrentContext: "shard-base"}).ClientConfig()
		if err == nil && ready(cfg) {
			return p, cfg
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func ready(cfg *rest.Config) bool {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestRealKCP runs the sequential probe and the load against a real kcp
// (`kcp start`, loopback, --batteries-included=admin, the admin
// kubeconfig's shard-base context). KCP_BINARY_VARIANT says what to expect:
// "patched" (default): clean; "pristine": polluted by one request, killed by
// the load.
func TestRealKCP(t *testing.T) {
	bin := kcpBinary(t)
	variant := os.Getenv("KCP_BINARY_VARIANT")
	if variant == "" {
		variant = "patched"
	}
	if variant != "patched" && variant != "pristine" {
		t.Fatalf("KCP_BINARY_VARIANT=%q: want patched or pristine", variant)
	}
	p, cfg := startKCP(t, bin)

	o := hammer.DefaultOptions()
	o.Config = cfg
	o.Clusters = []string{"root"}
	if v := os.Getenv("KCP_CARRY_E2E_KCP_CLUSTERS"); v != "" {
		o.Clusters = strings.Split(v, ",")
	}
	o.Duration = loadDuration(t)
	o.MaxRequests = maxRequests(t)
	o.ServerExited = p.done
	o.Logf = t.Logf

	probe := o
	probe.SequentialProbe = true
	rep := runHammer(t, probe)
	switch variant {
	case "patched":
		if rep.ExitCode != hammer.ExitClean {
			t.Errorf("probe against a patched kcp: %s (exit %d)", rep.Verdict, rep.ExitCode)
		}
	case "pristine":
		if !rep.Pollution.Violated() {
			t.Errorf("one wildcard partial LIST did not pollute a pristine kcp: %+v", rep.Pollution)
		}
	}

	rep = runHammer(t, o)
	switch variant {
	case "patched":
		if rep.Death.Died {
			t.Fatalf("the patched kcp died %s into the load: %s\n%s", rep.TimeToDeath, rep.Death.Evidence, fixture.ParseFatal(p.stderr.String()))
		}
		if rep.ExitCode != hammer.ExitClean {
			t.Errorf("load against a patched kcp: %s (exit %d); violations %v", rep.Verdict, rep.ExitCode, rep.Violations())
		}
	case "pristine":
		if !rep.Death.Died {
			t.Fatalf("a pristine kcp survived %s of load: the positive control lost its teeth", rep.LoadElapsed)
		}
		select {
		case <-p.done:
		case <-time.After(deathGrace):
			t.Fatalf("the hammer reported kcp dead but it is still running")
		}
		if f := fixture.ParseFatal(p.stderr.String()); !mapFatal(f) {
			t.Errorf("kcp died, but not of a concurrent map failure:\n%s", f)
		} else {
			t.Logf("pristine kcp died %s into the load: %s", rep.TimeToDeath, f)
		}
	}
}
