package hammer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
)

// errBudget ends a worker: the run's request budget is spent.
var errBudget = errors.New("request budget spent")

// errRunOver ends a worker: the run's context ended while a request was in flight.
var errRunOver = errors.New("run over")

// errRunEnded ends a worker: the run's context ended before a request was sent.
var errRunEnded = errors.New("run ended")

// budget is a shared request budget.
type budget struct{ left atomic.Int64 }

func newBudget(n int64) *budget {
	b := &budget{}
	b.left.Store(n)
	return b
}

func (b *budget) take() bool { return b.left.Add(-1) >= 0 }

// client sends the hammer's HTTP requests and records each one.
type client struct {
	base    string // scheme://host[:port][/prefix], without /clusters/...
	http    *http.Client
	cfg     *rest.Config // Host = base
	rec     *recorder
	death   *deathWatch
	budget  *budget // nil: unbounded (seeding, after-load reads)
	timeout time.Duration
}

// BaseConfig returns a copy of cfg whose Host is the server's base URL: a
// trailing /clusters/<name> (as in kcp's per-workspace kubeconfig contexts) is
// removed.
func BaseConfig(cfg *rest.Config) (*rest.Config, error) {
	if cfg == nil || cfg.Host == "" {
		return nil, errors.New("no server host in the REST config")
	}
	c := rest.CopyConfig(cfg)
	host := c.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", cfg.Host, err)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("server %q: no host", cfg.Host)
	}
	if i := strings.Index(u.Path, "/clusters/"); i >= 0 {
		u.Path = u.Path[:i]
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	c.Host = u.String()
	c.APIPath = ""
	// The hammer bounds its own load; client-go's default 5 QPS would hide it.
	c.QPS, c.Burst, c.RateLimiter = -1, 0, nil
	return c, nil
}

func newClient(cfg *rest.Config, rec *recorder, death *deathWatch, timeout time.Duration) (*client, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building an HTTP client for %s: %w", cfg.Host, err)
	}
	return &client{base: cfg.Host, http: hc, cfg: cfg, rec: rec, death: death, timeout: timeout}, nil
}

// hostport is the address the death check dials.
func (c *client) hostport() string {
	u, err := url.Parse(c.base)
	if err != nil {
		return ""
	}
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "http" {
		return net.JoinHostPort(u.Hostname(), "80")
	}
	return net.JoinHostPort(u.Hostname(), "443")
}

func (c *client) withBudget(b *budget) *client {
	cc := *c
	cc.budget = b
	return &cc
}

type request struct {
	op          string
	method      string
	path        string
	query       url.Values
	accept      string
	contentType string
	body        []byte
	// decode, when set, checks a 2xx answer; its error is recorded as the
	// request's outcome.
	decode func(body []byte) error
}

// do sends one request and reads the whole answer. A non-2xx answer is a
// *StatusError. The request is recorded under op unless the run ended under it.
func (c *client) do(ctx context.Context, r request) ([]byte, error) {
	if c.budget != nil && !c.budget.take() {
		return nil, errBudget
	}
	if ctx.Err() != nil {
		return nil, errRunEnded
	}
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	start := time.Now()
	body, err := c.roundTrip(rctx, r)
	if err == nil && r.decode != nil {
		err = r.decode(body)
	}
	return body, c.record(ctx, r.op, start, err)
}

// record files the outcome of one request started at start and returns err,
// or errRunOver when the run's context ended under the request.
func (c *client) record(ctx context.Context, op string, start time.Time, err error) error {
	if err != nil && ctx.Err() != nil && Classify(err) == ClassTransport {
		return errRunOver
	}
	class := Classify(err)
	c.rec.observe(op, time.Since(start), class, err)
	switch class {
	case ClassTransport:
		c.death.transportError(start, err)
	default:
		c.death.success()
	}
	return err
}

func (c *client) newRequest(ctx context.Context, r request) (*http.Request, error) {
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, err
	}
	if r.accept != "" {
		req.Header.Set("Accept", r.accept)
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	req.Header.Set("User-Agent", "kcp-carry-hammer")
	return req, nil
}

func (c *client) roundTrip(ctx context.Context, r request) ([]byte, error) {
	req, err := c.newRequest(ctx, r)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", r.method, r.path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &StatusError{Method: r.method, Path: r.path, Code: resp.StatusCode, Body: snippet(body)}
	}
	return body, nil
}

// stream opens a streaming request (a watch); the caller closes the body.
// Only failure to open is recorded; the caller records the stream's outcome.
func (c *client) stream(ctx context.Context, r request) (*http.Response, time.Time, error) {
	start := time.Now()
	if c.budget != nil && !c.budget.take() {
		return nil, start, errBudget
	}
	if ctx.Err() != nil {
		return nil, start, errRunEnded
	}
	req, err := c.newRequest(ctx, r)
	if err != nil {
		return nil, start, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, start, c.record(ctx, r.op, start, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, start, c.record(ctx, r.op, start, &StatusError{Method: r.method, Path: r.path, Code: resp.StatusCode, Body: snippet(body)})
	}
	return resp, start, nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
