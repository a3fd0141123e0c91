package hammer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
)

type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// watcher runs one watcher until the run ends, its budget is spent or the
// server dies. Each watch opens a partial-metadata WATCH of shape s (one of
// requestshape.HammerWatchers: from resourceVersion 0, so the watch cache
// replays every object through the per-object PartialObjectMetadata
// conversion) where --scope says, and stays open for one watch window.
func (r *run) watcher(ctx context.Context, c *client, s requestshape.Shape) {
	for i := 0; ; i++ {
		res := r.opts.Resources[i%len(r.opts.Resources)]
		cluster := r.scopeCluster(i / len(r.opts.Resources))
		err := r.watchOnce(ctx, c, s, res, cluster)
		if r.stopped(ctx, err) {
			return
		}
	}
}

func (r *run) watchOnce(ctx context.Context, c *client, s requestshape.Shape, res Resource, cluster string) error {
	op := "watch " + s.Accept.MetaVersion
	return r.watchPartial(ctx, c, op, s, requestshape.Params{}, res, cluster, func(m partialMeta) {
		r.observe(op, checks.Watcher, res, cluster, m)
	})
}

// watchPartial opens one partial-metadata WATCH of shape s with params p of
// res in cluster ("*" for the wildcard), keeps it open for one watch window
// and hands every ADDED, MODIFIED and DELETED object to onItem.
func (r *run) watchPartial(ctx context.Context, c *client, op string, s requestshape.Shape, p requestshape.Params, res Resource, cluster string, onItem func(partialMeta)) error {
	path := res.collectionPath(cluster, "")
	metaVersion := s.Accept.MetaVersion
	window := r.opts.WatchWindow
	q := s.Query(p)
	q.Set("allowWatchBookmarks", "true")
	q.Set("timeoutSeconds", strconv.Itoa(max(1, int(window.Round(time.Second)/time.Second))))
	wctx, cancel := context.WithTimeout(ctx, window+c.timeout)
	defer cancel()
	resp, start, err := c.stream(wctx, request{op: op, method: "GET", path: path, query: q, accept: s.AcceptHeader()})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// The window bounds the watch even if the server ignores timeoutSeconds.
	timer := time.AfterFunc(window, func() { resp.Body.Close() })
	defer timer.Stop()

	dec := json.NewDecoder(resp.Body)
	var streamErr error
	for {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil && timer.Stop() {
				// Neither the server's timeout nor our window ended it.
				streamErr = fmt.Errorf("watch %s: %w", path, err)
			}
			break
		}
		switch ev.Type {
		case "ADDED", "MODIFIED", "DELETED":
			var it partialItem
			if err := json.Unmarshal(ev.Object, &it); err != nil {
				streamErr = &ProtocolError{Path: path, Msg: "undecodable watch event: " + err.Error()}
			} else if it.Kind != "PartialObjectMetadata" || it.APIVersion != "meta.k8s.io/"+metaVersion {
				streamErr = &ProtocolError{Path: path, Msg: fmt.Sprintf("asked for PartialObjectMetadata meta.k8s.io/%s, got %s %s", metaVersion, it.Kind, it.APIVersion)}
			} else {
				onItem(it.Metadata)
				r.watchEvents.Add(1)
				continue
			}
		case "BOOKMARK":
			continue
		case "ERROR":
			var st struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}
			_ = json.Unmarshal(ev.Object, &st)
			streamErr = &StatusError{Method: "WATCH", Path: path, Code: st.Code, Body: st.Message}
			if st.Code == 0 {
				streamErr = &ProtocolError{Path: path, Msg: "watch error event: " + string(ev.Object)}
			}
		default:
			streamErr = &ProtocolError{Path: path, Msg: fmt.Sprintf("unknown watch event type %q", ev.Type)}
		}
		break
	}
	return c.record(ctx, op, start, streamErr)
}
