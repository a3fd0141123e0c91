package hammer

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
)

// Scopes of a mixed-watchers watch, as they appear in check (d)'s values.
const (
	mixedWildcard      = "wildcard"
	mixedSingleCluster = "single-cluster"
)

// mixedWatchCheck is check (d): wildcard and single-cluster partial-metadata
// watches of the same resource, open at the same time, each get their own
// answer. The watch cache serializes an event once per encoder identifier and
// hands the bytes to every watcher with that identifier; when a wildcard and a
// single-cluster watch share one, whichever encodes first decides what both
// receive. So every wildcard event must carry kcp.io/original-api-version
// equal to the served group/version, and no single-cluster event may carry it.
type mixedWatchCheck struct {
	mu      sync.Mutex
	checked int64
	bad     int64
	values  map[string]int64
	samples []string
}

func newMixedWatchCheck() *mixedWatchCheck {
	return &mixedWatchCheck{values: map[string]int64{}}
}

// event checks one object a mixed watch of scope (mixedWildcard or
// mixedSingleCluster) received for res.
func (m *mixedWatchCheck) event(op, scope string, res Resource, p partialMeta) {
	shown := missingValue
	if p.Annotations.OriginalAPIVersion != nil {
		shown = strconv.Quote(*p.Annotations.OriginalAPIVersion)
	}
	var ok bool
	var want string
	if scope == mixedWildcard {
		want = strconv.Quote(res.GroupVersion())
		ok = shown == want
	} else {
		want = "no such annotation"
		ok = p.Annotations.OriginalAPIVersion == nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.checked++
	m.values[scope+": "+shown]++
	if ok {
		return
	}
	m.bad++
	if len(m.samples) < maxSamples {
		m.samples = append(m.samples, fmt.Sprintf("%s: %s %s: %s=%s, want %s",
			op, res.Resource, describePartial(p), OriginalAPIVersionAnnotation, shown, want))
	}
}

func (m *mixedWatchCheck) result(groups int) CheckResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := CheckResult{
		Name:       "d: mixed watchers",
		Ran:        m.checked > 0,
		Checked:    m.checked,
		Violations: m.bad,
		Samples:    append([]string(nil), m.samples...),
		Values:     map[string]int64{},
	}
	for k, v := range m.values {
		r.Values[k] = v
	}
	switch {
	case groups == 0:
		r.Note = "no --mixed-watchers"
	case m.checked == 0:
		r.Note = "the mixed watchers received no event"
	}
	return r
}

// SingleClusterAnnotated counts the single-cluster events of check (d) that
// carried kcp.io/original-api-version: an answer meant for a wildcard watcher.
func (c CheckResult) SingleClusterAnnotated() int64 {
	var n int64
	for k, v := range c.Values {
		if strings.HasPrefix(k, mixedSingleCluster+": ") && k != mixedSingleCluster+": "+missingValue {
			n += v
		}
	}
	return n
}

// mixedWatchers runs one group of mixed watchers until the run ends, its
// budget is spent or the server dies. Window after window it takes the next
// resource and logical cluster and opens, at the same time, the watches of
// requestshape.MixedWatchers (a wildcard and a single-cluster partial-metadata
// WATCH of that resource at meta.k8s.io v1 and at v1beta1), all from the
// resourceVersion of a fresh single-cluster LIST: so they see only events that
// happen while they are open, which the watch cache dispatches to all of them
// (not a replay of its store).
func (r *run) mixedWatchers(ctx context.Context, c *client, group int) {
	for i := group; ; i++ {
		res := r.opts.Resources[i%len(r.opts.Resources)]
		cluster := r.opts.Clusters[(i/len(r.opts.Resources))%len(r.opts.Clusters)]
		rv, err := r.currentResourceVersion(ctx, c, res, cluster)
		if r.stopped(ctx, err) {
			return
		}
		if err != nil {
			continue
		}
		var wg sync.WaitGroup
		errs := make([]error, len(requestshape.MixedWatchers))
		for slot, s := range requestshape.MixedWatchers {
			scope, target := mixedWildcard, "*"
			if s.Scope == requestshape.SingleCluster {
				scope, target = mixedSingleCluster, cluster
			}
			op := fmt.Sprintf("watch mixed %s %s", s.Accept.MetaVersion, scope)
			wg.Go(func() {
				errs[slot] = r.watchPartial(ctx, c, op, s, requestshape.Params{ResourceVersion: rv}, res, target, func(p partialMeta) {
					r.mixedCheck.event(op, scope, res, p)
				})
			})
		}
		wg.Wait()
		for _, err := range errs {
			if r.stopped(ctx, err) {
				return
			}
		}
	}
}

// currentResourceVersion is the resourceVersion of a one-item full-object
// LIST of res in cluster, read from etcd: a point all watches can start from.
func (r *run) currentResourceVersion(ctx context.Context, c *client, res Resource, cluster string) (string, error) {
	path := res.collectionPath(cluster, "")
	var list metaList
	_, err := c.do(ctx, request{op: "watch mixed list", method: "GET", path: path, query: url.Values{"limit": {"1"}},
		decode: func(b []byte) error {
			if err := decodeFullList(path, b, &list); err != nil {
				return err
			}
			if list.Metadata.ResourceVersion == "" {
				return &ProtocolError{Path: path, Msg: "list without a resourceVersion"}
			}
			return nil
		}})
	return list.Metadata.ResourceVersion, err
}
