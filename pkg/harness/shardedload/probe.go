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

	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// Prober asks the front-proxy, as kcp-admin, for one ConfigMap of every
// workspace's default namespace every interval, until Stop: what a user of
// each workspace sees while the shards are loaded.
type Prober struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started time.Time

	mu      sync.Mutex
	results []*report.Probe
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
		r := &report.Probe{Shard: ws.Shard, Cluster: ws.Cluster}
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

func (p *Prober) probe(ctx context.Context, hc *http.Client, url string, r *report.Probe) {
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
		r.Seconds = append(r.Seconds, report.ProbeSecond{})
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
func (p *Prober) Stop() []report.Probe {
	p.cancel()
	p.wg.Wait()
	return p.Snapshot()
}

// Snapshot is what the probes got so far.
func (p *Prober) Snapshot() []report.Probe {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]report.Probe, len(p.results))
	for i, r := range p.results {
		out[i] = *r
		out[i].Seconds = append([]report.ProbeSecond(nil), r.Seconds...)
	}
	return out
}
