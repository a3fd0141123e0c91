package shardedload

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// ProbeSecond is one second of a workspace's probes.
type ProbeSecond struct {
	OK     int `json:"ok"`
	Failed int `json:"failed"`
}

// ProbeResult is what the front-proxy answered for one workspace.
type ProbeResult struct {
	server.Workspace
	OK, Failed int
	// FirstFailure is the first failed answer (status and body, or the
	// transport error), at FirstFailureAt since the probes started;
	// LastFailure the last one.
	FirstFailure   string
	FirstFailureAt time.Duration
	LastFailure    string
	// LastStatus is the HTTP status of the last answer (0: none).
	LastStatus int
	// Seconds are the answers second by second since the probes started.
	Seconds []ProbeSecond
}

// AnswerRate is the share of probes answered 200.
func (r ProbeResult) AnswerRate() float64 {
	if r.OK+r.Failed == 0 {
		return 0
	}
	return float64(r.OK) / float64(r.OK+r.Failed)
}

// Prober asks the front-proxy, as kcp-admin, for one ConfigMap of every
// workspace's default namespace every interval, until Stop: what a user of
// each workspace sees while the shards are loaded.
type Prober struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started time.Time

	mu      sync.Mutex
	results []*ProbeResult
}

// ProbeTimeout bounds each probe request.
const ProbeTimeout = 5 * time.Second

// StartProber probes each workspace every interval through t's front-proxy
// until Stop or ctx ends.
func StartProber(ctx context.Context, t *server.Topology, workspaces []server.Workspace, interval time.Duration) (*Prober, error) {
	cfg := t.FrontProxyConfig()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Prober{cancel: cancel, started: time.Now()}
	for _, ws := range workspaces {
		r := &ProbeResult{Workspace: ws}
		p.results = append(p.results, r)
		url := fmt.Sprintf("%s/clusters/%s/api/v1/namespaces/default/configmaps?limit=1", cfg.Host, ws.Cluster)
		p.wg.Go(func() {
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				p.probe(ctx, hc, url, r)
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	return p, nil
}

func (p *Prober) probe(ctx context.Context, hc *http.Client, url string, r *ProbeResult) {
	rctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	status, failure := get(rctx, hc, url)
	if ctx.Err() != nil {
		return // stopped mid-request: no answer to count
	}
	at := time.Since(p.started)
	p.mu.Lock()
	defer p.mu.Unlock()
	sec := int(at / time.Second)
	for len(r.Seconds) <= sec {
		r.Seconds = append(r.Seconds, ProbeSecond{})
	}
	r.LastStatus = status
	if failure == "" {
		r.OK++
		r.Seconds[sec].OK++
		return
	}
	r.Failed++
	r.Seconds[sec].Failed++
	if r.FirstFailure == "" {
		r.FirstFailure, r.FirstFailureAt = failure, at
	}
	r.LastFailure = failure
}

// get returns the status and, unless it is 200, a one-line description of
// the answer.
func get(ctx context.Context, hc *http.Client, url string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, ""
	}
	return resp.StatusCode, fmt.Sprintf("%s: %s", resp.Status, strings.Join(strings.Fields(string(body)), " "))
}

// Stop ends the probes and returns what each workspace got, in the order
// StartProber was given.
func (p *Prober) Stop() []ProbeResult {
	p.cancel()
	p.wg.Wait()
	return p.Snapshot()
}

// Snapshot is what the probes got so far.
func (p *Prober) Snapshot() []ProbeResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]ProbeResult, len(p.results))
	for i, r := range p.results {
		out[i] = *r
		out[i].Seconds = append([]ProbeSecond(nil), r.Seconds...)
	}
	return out
}
