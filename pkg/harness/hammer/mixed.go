package hammer

import (
	"context"
	"fmt"
	"net/url"
	"sync"

	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
)

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
			scope, target := checks.WildcardScope, "*"
			if s.Scope == requestshape.SingleCluster {
				scope, target = checks.SingleClusterScope, cluster
			}
			op := fmt.Sprintf("watch mixed %s %s", s.Accept.MetaVersion, scope)
			wg.Go(func() {
				errs[slot] = r.watchPartial(ctx, c, op, s, requestshape.Params{ResourceVersion: rv}, res, target, func(p partialMeta) {
					r.observe(op, checks.MixedWatcher, res, target, p)
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
