package hammer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kcp-carry/kcp-carry/pkg/harness/partialmeta"
	"io"
	"net/url"
	"strconv"
	"time"
)

type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// watcher runs one watcher until the run ends, its budget is spent or the
// server dies. Each watch opens a wildcard partial-metadata WATCH from
// resourceVersion 0 (so the watch cache replays every object through the
// per-object PartialObjectMetadata conversion) and stays open for one watch
// window.
func (r *run) watcher(ctx context.Context, c *client, metaVersion string) {
	for i := 0; ; i++ {
		res := r.opts.Resources[i%len(r.opts.Resources)]
		cluster := r.scopeCluster(i / len(r.opts.Resources))
		err := r.watchOnce(ctx, c, metaVersion, res, cluster)
		if r.stopped(ctx, err) {
			return
		}
	}
}

func (r *run) watchOnce(ctx context.Context, c *client, metaVersion string, res Resource, cluster string) error {
	q := url.Values{}
	q.Set("resourceVersion", "0")
	return r.watchPartial(ctx, c, "watch "+metaVersion, metaVersion, res, cluster, q, func(m partialMeta) {
		if cluster == "*" {
			r.apiCheck.item("watch "+metaVersion, res, m)
		}
	})
}

// watchPartial opens one partial-metadata WATCH of res in cluster ("*" for
// the wildcard) with the given query (resourceVersion), keeps it open for one
// watch window and hands every ADDED, MODIFIED and DELETED object to onItem.
func (r *run) watchPartial(ctx context.Context, c *client, op, metaVersion string, res Resource, cluster string, q url.Values, onItem func(partialMeta)) error {
	path := res.collectionPath(cluster, "")
	window := r.opts.WatchWindow
	q.Set("watch", "true")
	q.Set("allowWatchBookmarks", "true")
	q.Set("timeoutSeconds", strconv.Itoa(max(1, int(window.Round(time.Second)/time.Second))))
	wctx, cancel := context.WithTimeout(ctx, window+c.timeout)
	defer cancel()
	resp, start, err := c.stream(wctx, request{op: op, method: "GET", path: path, query: q, accept: partialmeta.ObjectAccept(metaVersion)})
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
