package hammer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
)

// SeedResult says what seeding found and did.
type SeedResult struct {
	Objects int `json:"objects"` // objects the run uses
	Created int `json:"created"` // of which this run created
	Existed int `json:"existed"` // of which were already there
	// NamespacesCreated lists cluster|namespace pairs this run created.
	NamespacesCreated []string `json:"namespacesCreated,omitempty"`
	// CacheSync is how long the watch cache took to show every seeded object.
	CacheSync time.Duration `json:"cacheSyncNanos"`
	Deleted   int           `json:"deleted,omitempty"` // by cleanup
}

// parallel runs f on every index in [0, n) with at most workers at once and
// returns the errors joined (at most a few, to keep messages short).
func parallel(n, workers int, f func(i int) error) error {
	var (
		mu   sync.Mutex
		errs []error
		g    errgroup.Group
	)
	// Every index runs even after a failure: f's errors are collected, not
	// returned to the group, so one bad object does not stop the others.
	g.SetLimit(workers)
	for i := 0; i < n; i++ {
		g.Go(func() error {
			if err := f(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	if len(errs) > 3 {
		errs = append(errs[:3], fmt.Errorf("and %d more errors", len(errs)-3))
	}
	return errors.Join(errs...)
}

// ensureNamespaces creates the namespace of namespaced resources in every
// logical cluster when it is missing.
func (r *run) ensureNamespaces(ctx context.Context) error {
	namespaced := false
	for _, res := range r.opts.Resources {
		namespaced = namespaced || res.Namespaced
	}
	if !namespaced {
		return nil
	}
	nsRes := Resource{Version: "v1", Resource: "namespaces", Kind: "Namespace"}
	for _, cluster := range r.opts.Clusters {
		path := nsRes.objectPath(cluster, "", r.opts.Namespace)
		_, err := r.c.do(ctx, request{op: "seed namespace get", method: "GET", path: path})
		if err == nil {
			continue
		}
		if !isNotFound(err) {
			return fmt.Errorf("namespace %s in logical cluster %s: %w", r.opts.Namespace, cluster, err)
		}
		body, _ := json.Marshal(map[string]any{
			"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": r.opts.Namespace, "labels": map[string]string{OwnedLabel: "true"}},
		})
		_, err = r.c.do(ctx, request{op: "seed namespace create", method: "POST", path: nsRes.collectionPath(cluster, ""), contentType: "application/json", body: body})
		if isNotFound(err) {
			// The server does not serve namespaces (the kcp-carry test
			// shard); it cannot require them either.
			return nil
		}
		if err != nil && !isAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s in logical cluster %s: %w", r.opts.Namespace, cluster, err)
		}
		if err == nil {
			r.seed.NamespacesCreated = append(r.seed.NamespacesCreated, cluster+"|"+r.opts.Namespace)
		}
	}
	return nil
}

// seedObjects creates every missing object.
func (r *run) seedObjects(ctx context.Context) error {
	r.seed.Objects = len(r.objects)
	if err := r.ensureNamespaces(ctx); err != nil {
		return err
	}
	var mu sync.Mutex
	err := parallel(len(r.objects), 4, func(i int) error {
		if r.death.dead() {
			return nil
		}
		o := r.objects[i]
		body, err := seedBody(o, r.opts.Annotations)
		if err != nil {
			return err
		}
		_, err = r.c.do(ctx, request{op: "seed create", method: "POST", path: o.res.collectionPath(o.key.Cluster, o.key.Namespace), contentType: "application/json", body: body})
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			r.seed.Created++
			r.created = append(r.created, o)
		case isAlreadyExists(err):
			r.seed.Existed++
		default:
			return fmt.Errorf("seeding %s: %w", o.key, err)
		}
		return nil
	})
	sort.Slice(r.created, func(i, j int) bool { return r.created[i].key.String() < r.created[j].key.String() })
	return err
}

// waitForCache lists every logical cluster from the watch cache
// (resourceVersion 0) until it shows every seeded object, and takes each
// object's label as the ledger's baseline.
func (r *run) waitForCache(ctx context.Context) error {
	start := time.Now()
	var (
		missing []string
		lastErr error
	)
	// The lists use ctx, not the poll's: a list cut off by the sync timeout
	// would hide what was still missing behind "context deadline exceeded".
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, r.opts.SyncTimeout, true, func(context.Context) (bool, error) {
		missing, lastErr = r.cacheMissing(ctx)
		if lastErr == nil && len(missing) == 0 {
			r.seed.CacheSync = time.Since(start)
			return true, nil
		}
		return r.death.dead(), nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case lastErr != nil:
		return fmt.Errorf("waiting for the watch cache to show the seeded objects: %w", lastErr)
	}
	return fmt.Errorf("the watch cache did not show %d seeded objects within %s (first: %s)", len(missing), r.opts.SyncTimeout, missing[0])
}

func (r *run) cacheMissing(ctx context.Context) ([]string, error) {
	seen := map[checks.ObjectKey]string{}
	for _, res := range r.opts.Resources {
		for _, cluster := range r.opts.Clusters {
			ns := ""
			if res.Namespaced {
				ns = r.opts.Namespace
			}
			q := url.Values{"resourceVersion": {"0"}, "labelSelector": {OwnedLabel + "=true"}}
			var list metaList
			path := res.collectionPath(cluster, ns)
			_, err := r.c.do(ctx, request{op: "seed sync list", method: "GET", path: path, query: q,
				decode: func(b []byte) error { return decodeFullList(path, b, &list) }})
			if err != nil {
				return nil, err
			}
			for _, it := range list.Items {
				seen[checks.ObjectKey{Resource: res.Resource, Cluster: cluster, Namespace: it.Metadata.Namespace, Name: it.Metadata.Name}] = it.Metadata.Labels[GenLabel]
			}
		}
	}
	var missing []string
	for _, o := range r.objects {
		v, ok := seen[o.key]
		if !ok {
			missing = append(missing, o.key.String())
			continue
		}
		r.ledger.Baseline(o.key.String(), v)
	}
	return missing, nil
}

func decodeFullList(path string, body []byte, into *metaList) error {
	if err := json.Unmarshal(body, into); err != nil {
		return &ProtocolError{Path: path, Msg: "undecodable list: " + err.Error()}
	}
	if !strings.HasSuffix(into.Kind, "List") || strings.HasPrefix(into.Kind, "PartialObjectMetadata") {
		return &ProtocolError{Path: path, Msg: "asked for a full-object list, got " + into.Kind}
	}
	return nil
}

// cleanup deletes the objects this run created (and the namespaces it created).
func (r *run) cleanup(ctx context.Context) error {
	err := parallel(len(r.created), 4, func(i int) error {
		o := r.created[i]
		_, err := r.c.do(ctx, request{op: "cleanup delete", method: "DELETE", path: o.path()})
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("deleting %s: %w", o.key, err)
		}
		r.mu.Lock()
		r.seed.Deleted++
		r.mu.Unlock()
		return nil
	})
	nsRes := Resource{Version: "v1", Resource: "namespaces", Kind: "Namespace"}
	for _, cn := range r.seed.NamespacesCreated {
		cluster, ns, _ := strings.Cut(cn, "|")
		if _, derr := r.c.do(ctx, request{op: "cleanup delete", method: "DELETE", path: nsRes.objectPath(cluster, "", ns)}); derr != nil && !isNotFound(derr) {
			err = errors.Join(err, fmt.Errorf("deleting namespace %s in %s: %w", ns, cluster, derr))
		}
	}
	return err
}

// cleanupAll deletes every object carrying OwnedLabel whose name has the
// prefix, in every logical cluster: what earlier runs left behind.
func (r *run) cleanupAll(ctx context.Context) error {
	var victims []seededObject
	for _, res := range r.opts.Resources {
		for _, cluster := range r.opts.Clusters {
			path := res.collectionPath(cluster, "")
			var list metaList
			_, err := r.c.do(ctx, request{op: "cleanup list", method: "GET", path: path,
				query:  url.Values{"labelSelector": {OwnedLabel + "=true"}},
				decode: func(b []byte) error { return decodeFullList(path, b, &list) }})
			if err != nil {
				return fmt.Errorf("listing %s in %s: %w", res.Resource, cluster, err)
			}
			for _, it := range list.Items {
				if strings.HasPrefix(it.Metadata.Name, r.opts.Prefix) {
					victims = append(victims, seededObject{res: res, key: checks.ObjectKey{Resource: res.Resource, Cluster: cluster, Namespace: it.Metadata.Namespace, Name: it.Metadata.Name}})
				}
			}
		}
	}
	r.created = victims
	return r.cleanup(ctx)
}
