package hammer

import (
	"context"
	"encoding/json"
	"net/url"
	"sync"
)

// readBack is what the after-load reads saw: every seeded object (and the
// other objects in the same lists) read back in full, several ways. Checks
// (b) and (c) judge it.
type readBack struct {
	sources []*readSource
	// seeded are the objects the run seeded, in seeding order.
	seeded []seededObject
}

// readSource is one way of reading the objects back.
type readSource struct {
	mu   sync.Mutex
	name string
	// ran is false when the server refuses this kind of read; note says why
	// (or, when it ran, what failed).
	ran  bool
	note string
	// quorum: read from etcd, the objects' final state (check (c)).
	quorum bool
	// objects are what the reads returned; missing counts seeded objects
	// that were not in an answer or could not be read.
	objects []readObject
	missing int64
}

// readObject is one object as a read returned it.
type readObject struct {
	key    ObjectKey
	seeded bool
	meta   objectMeta
}

func (s *readSource) add(o readObject) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects = append(s.objects, o)
}

func (s *readSource) failed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.missing++
	if s.note == "" {
		s.note = "read failed: " + err.Error()
	}
}

// readObjectsBack reads every seeded object back after the load: full-object LISTs
// per logical cluster from the watch cache and consistent, across all logical
// clusters from the cache, and a GET of each from the cache and from etcd.
func (r *run) readObjectsBack(ctx context.Context) *readBack {
	seeded := map[ObjectKey]bool{}
	for _, o := range r.objects {
		seeded[o.key] = true
	}
	rb := &readBack{seeded: r.objects}
	byName := map[string]*readSource{}
	source := func(name string) *readSource {
		if s := byName[name]; s != nil {
			return s
		}
		s := &readSource{name: name, ran: true}
		byName[name] = s
		rb.sources = append(rb.sources, s)
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
					s.ran, s.note = false, "the server refuses full-object wildcard lists: "+err.Error()
				} else {
					s.note = "read failed: " + err.Error()
				}
				s.mu.Unlock()
				continue
			}
			found := map[ObjectKey]bool{}
			for _, it := range list.Items {
				k := ObjectKey{Resource: res.Resource, Cluster: clusterOf(it.Metadata, l.cluster), Namespace: it.Metadata.Namespace, Name: it.Metadata.Name}
				found[k] = true
				s.add(readObject{key: k, seeded: seeded[k], meta: it.Metadata})
			}
			for _, o := range r.objects {
				if o.key.Resource == res.Resource && (l.cluster == "*" || o.key.Cluster == l.cluster) && !found[o.key] {
					s.mu.Lock()
					s.missing++
					s.mu.Unlock()
				}
			}
		}
	}

	cacheGet := source("get rv=0 (cache)")
	quorumGet := source(`get rv="" (etcd quorum)`)
	quorumGet.quorum = true
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
			g.s.add(readObject{key: o.key, seeded: true, meta: it.Metadata})
		}
		return nil
	})
	return rb
}

// quorum is the read of the objects' final state from etcd.
func (rb *readBack) quorum() *readSource {
	for _, s := range rb.sources {
		if s.quorum {
			return s
		}
	}
	return nil
}
