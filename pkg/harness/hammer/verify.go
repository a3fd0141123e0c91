package hammer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"
)

// SourceResult is check (b) for one way of reading the objects back.
type SourceResult struct {
	Name string `json:"name"`
	Ran  bool   `json:"ran"`
	Note string `json:"note,omitempty"`
	// Checked seeded objects were read; Polluted of them carry the annotation;
	// Missing were not in the answer.
	Checked  int64 `json:"checked"`
	Polluted int64 `json:"polluted"`
	Missing  int64 `json:"missing,omitempty"`
	// Other objects in the same lists (not seeded by the hammer).
	OtherChecked  int64    `json:"otherChecked,omitempty"`
	OtherPolluted int64    `json:"otherPolluted,omitempty"`
	Samples       []string `json:"samples,omitempty"`
}

type sourceAcc struct {
	mu sync.Mutex
	SourceResult
}

func (s *sourceAcc) object(k ObjectKey, m objectMeta, seeded bool) {
	v, polluted := m.Annotations[OriginalAPIVersionAnnotation]
	s.mu.Lock()
	defer s.mu.Unlock()
	if seeded {
		s.Checked++
	} else {
		s.OtherChecked++
	}
	if !polluted {
		return
	}
	if seeded {
		s.Polluted++
	} else {
		s.OtherPolluted++
	}
	if len(s.Samples) < maxSamples {
		s.Samples = append(s.Samples, fmt.Sprintf("%s: %s=%q", k, OriginalAPIVersionAnnotation, v))
	}
}

func (s *sourceAcc) result() SourceResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.SourceResult
}

// verify runs check (b) (no full-object read shows the annotation) and, when
// writers ran, check (c) (every object's label is its last successful write).
func (r *run) verify(ctx context.Context, withWrites bool) (pollution, lost CheckResult) {
	seeded := map[ObjectKey]bool{}
	for _, o := range r.objects {
		seeded[o.key] = true
	}
	var sources []*sourceAcc

	// Full-object LISTs: per logical cluster from the watch cache and
	// consistent, and across all logical clusters from the cache.
	type listSource struct{ name, cluster, rv string }
	var lists []listSource
	for _, c := range r.opts.Clusters {
		lists = append(lists, listSource{"list rv=0 (cache)", c, "0"}, listSource{`list rv="" (consistent)`, c, ""})
	}
	lists = append(lists, listSource{"wildcard list rv=0 (cache)", "*", "0"})
	byName := map[string]*sourceAcc{}
	source := func(name string) *sourceAcc {
		if s := byName[name]; s != nil {
			return s
		}
		s := &sourceAcc{SourceResult: SourceResult{Name: name, Ran: true}}
		byName[name] = s
		sources = append(sources, s)
		return s
	}
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
			_, err := r.c.do(ctx, request{op: "verify list", method: "GET", path: path, query: q,
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
			found := map[ObjectKey]bool{}
			for _, it := range list.Items {
				k := ObjectKey{Resource: res.Resource, Cluster: clusterOf(it.Metadata, l.cluster), Namespace: it.Metadata.Namespace, Name: it.Metadata.Name}
				found[k] = seeded[k]
				s.object(k, it.Metadata, seeded[k])
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

	// GETs of every seeded object: from the watch cache, and from etcd.
	cacheGet := source("get rv=0 (cache)")
	quorumGet := source(`get rv="" (etcd quorum)`)
	finals := map[ObjectKey]string{}
	var fmu sync.Mutex
	var unread int64
	_ = parallel(len(r.objects), 4, func(i int) error {
		if r.death.dead() {
			return nil
		}
		o := r.objects[i]
		for _, g := range []struct {
			s  *sourceAcc
			rv string
		}{{cacheGet, "0"}, {quorumGet, ""}} {
			q := url.Values{}
			if g.rv != "" {
				q.Set("resourceVersion", g.rv)
			}
			var it metaItem
			_, err := r.c.do(ctx, request{op: "verify get", method: "GET", path: o.path(), query: q,
				decode: func(b []byte) error {
					if err := json.Unmarshal(b, &it); err != nil {
						return &ProtocolError{Path: o.path(), Msg: "undecodable object: " + err.Error()}
					}
					return nil
				}})
			if err != nil {
				g.s.mu.Lock()
				g.s.Missing++
				if g.s.Note == "" {
					g.s.Note = "read failed: " + err.Error()
				}
				g.s.mu.Unlock()
				if g.s == quorumGet {
					fmu.Lock()
					unread++
					fmu.Unlock()
				}
				continue
			}
			g.s.object(o.key, it.Metadata, true)
			if g.s == quorumGet {
				fmu.Lock()
				finals[o.key] = it.Metadata.Labels[GenLabel]
				fmu.Unlock()
			}
		}
		return nil
	})

	pollution = CheckResult{Name: "b: no pollution", Ran: true}
	for _, s := range sources {
		sr := s.result()
		pollution.Sources = append(pollution.Sources, sr)
		if !sr.Ran {
			continue
		}
		pollution.Checked += sr.Checked + sr.OtherChecked
		pollution.Violations += sr.Polluted + sr.OtherPolluted
		for _, smp := range sr.Samples {
			if len(pollution.Samples) < maxSamples {
				pollution.Samples = append(pollution.Samples, sr.Name+": "+smp)
			}
		}
	}
	if r.death.dead() {
		pollution.Ran, pollution.Note = false, "the server died"
	}

	lost = CheckResult{Name: "c: nothing lost", Ran: withWrites && !r.death.dead()}
	switch {
	case r.death.dead():
		lost.Note = "the server died"
	case !withWrites:
		lost.Note = "no writers ran"
	}
	if !lost.Ran {
		return pollution, lost
	}
	lost.Unverified = unread
	for _, o := range r.objects {
		final, read := finals[o.key]
		if !read {
			continue
		}
		ok, uncertain, known, want := r.ledger.verdict(o.key, final)
		if !known {
			lost.Unverified++
			continue
		}
		lost.Checked++
		if uncertain {
			lost.Uncertain++
		}
		if !ok {
			lost.Violations++
			if len(lost.Samples) < maxSamples {
				lost.Samples = append(lost.Samples, fmt.Sprintf("%s: %s=%q, last successful write %q", o.key, GenLabel, final, want))
			}
		}
	}
	return pollution, lost
}
