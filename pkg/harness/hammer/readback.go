package hammer

import (
	"context"
	"encoding/json"
	"net/url"
	"sync"

	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
)

// readSource collects one way of reading the objects back, concurrently.
type readSource struct {
	mu sync.Mutex
	checks.Source
}

// add records an object a read returned.
func (s *readSource) add(key checks.ObjectKey, seeded bool, meta objectMeta) {
	o := checks.Object{Key: key.String(), Seeded: seeded, Written: meta.Labels[GenLabel]}
	if v, ok := meta.Annotations[OriginalAPIVersionAnnotation]; ok {
		o.OriginalAPIVersion = &v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Objects = append(s.Objects, o)
}

func (s *readSource) failed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Missing++
	if s.Note == "" {
		s.Note = "read failed: " + err.Error()
	}
}

// readObjectsBack reads every seeded object back after the load: full-object LISTs
// per logical cluster from the watch cache and consistent, across all logical
// clusters from the cache, and a GET of each from the cache and from etcd:
// checks (b) and (c) judge what they saw.
func (r *run) readObjectsBack(ctx context.Context) *checks.ReadBack {
	seeded := map[checks.ObjectKey]bool{}
	rb := &checks.ReadBack{}
	for _, o := range r.objects {
		seeded[o.key] = true
		rb.Seeded = append(rb.Seeded, o.key.String())
	}
	var sources []*readSource
	byName := map[string]*readSource{}
	source := func(name string) *readSource {
		if s := byName[name]; s != nil {
			return s
		}
		s := &readSource{Source: checks.Source{Name: name, Ran: true}}
		byName[name] = s
		sources = append(sources, s)
		return s
	}

	type listSource struct{ name, cluster, rv string }
	var lists []listSource
	for _, c := range r.opts.Clusters {
		lists = append(lists, listSource{"list rv=0 (cache)", c, "0"}, listSource{`list rv="" (consistent)`, c, ""})
	}
	lists = append(lists, listSource{"wildcard list rv=0 (cache)", "*", "0"})
	for _, l := range lists {
		s := source(l.name)
		for _, res := range r.opts.Resources {
			if r.death.dead() {
				break
			}
			path := res.collectionPath(l.cluster, "")
			q := url.Values{}
			if l.rv != "" {
				q.Set("resourceVersion", l.rv)
			}
			var list metaList
			_, err := r.c.do(ctx, request{op: "read-back list", method: "GET", path: path, query: q,
				decode: func(b []byte) error { return decodeFullList(path, b, &list) }})
			if err != nil {
				s.mu.Lock()
				if l.cluster == "*" && Classify(err) == Class4xx {
					s.Ran, s.Note = false, "the server refuses full-object wildcard lists: "+err.Error()
				} else {
					s.Note = "read failed: " + err.Error()
				}
				s.mu.Unlock()
				continue
			}
			found := map[checks.ObjectKey]bool{}
			for _, it := range list.Items {
				k := checks.ObjectKey{Resource: res.Resource, Cluster: clusterOf(it.Metadata, l.cluster), Namespace: it.Metadata.Namespace, Name: it.Metadata.Name}
				found[k] = true
				s.add(k, seeded[k], it.Metadata)
			}
			for _, o := range r.objects {
				if o.key.Resource == res.Resource && (l.cluster == "*" || o.key.Cluster == l.cluster) && !found[o.key] {
					s.mu.Lock()
					s.Missing++
					s.mu.Unlock()
				}
			}
		}
	}

	cacheGet := source("get rv=0 (cache)")
	quorumGet := source(`get rv="" (etcd quorum)`)
	quorumGet.Quorum = true
	_ = parallel(len(r.objects), 4, func(i int) error {
		if r.death.dead() {
			return nil
		}
		o := r.objects[i]
		for _, g := range []struct {
			s  *readSource
			rv string
		}{{cacheGet, "0"}, {quorumGet, ""}} {
			q := url.Values{}
			if g.rv != "" {
				q.Set("resourceVersion", g.rv)
			}
			var it metaItem
			_, err := r.c.do(ctx, request{op: "read-back get", method: "GET", path: o.path(), query: q,
				decode: func(b []byte) error {
					if err := json.Unmarshal(b, &it); err != nil {
						return &ProtocolError{Path: o.path(), Msg: "undecodable object: " + err.Error()}
					}
					return nil
				}})
			if err != nil {
				g.s.failed(err)
				continue
			}
			g.s.add(o.key, true, it.Metadata)
		}
		return nil
	})
	for _, s := range sources {
		rb.Sources = append(rb.Sources, s.Source)
	}
	return rb
}
