package hammer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// writerMode is the write mode of writer number w.
func writerMode(mode WriteMode, w int) WriteMode {
	if mode != WriteMixed {
		return mode
	}
	if w%2 == 0 {
		return WriteUpdate
	}
	return WritePatch
}

// writer runs writer number w of n until the run ends, its budget is spent or
// the server dies. It owns every n-th seeded object (so each object's writes
// are sequential and the last successful one is well defined) and sets
// GenLabel on them in turn.
func (r *run) writer(ctx context.Context, c *client, w, n int) {
	var mine []seededObject
	for i, o := range r.objects {
		if i%n == w {
			mine = append(mine, o)
		}
	}
	if len(mine) == 0 {
		return
	}
	mode := writerMode(r.opts.WriteMode, w)
	for seq := 1; ; seq++ {
		o := mine[(seq-1)%len(mine)]
		value := fmt.Sprintf("w%d-%d", w, seq)
		var err error
		if mode == WriteUpdate {
			err = r.update(ctx, c, o, value)
		} else {
			err = r.patch(ctx, c, o, value)
		}
		if r.stopped(ctx, err) {
			return
		}
	}
}

// update is GET from etcd, then UPDATE with the read resourceVersion.
func (r *run) update(ctx context.Context, c *client, o seededObject, value string) error {
	body, err := c.do(ctx, request{op: "write get", method: "GET", path: o.path()})
	if err != nil {
		return err
	}
	var obj map[string]any
	if err := json.Unmarshal(body, &obj); err != nil {
		return &ProtocolError{Path: o.path(), Msg: "undecodable object: " + err.Error()}
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		return &ProtocolError{Path: o.path(), Msg: "object without metadata"}
	}
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		meta["labels"] = labels
	}
	labels[GenLabel] = value
	put, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return r.write(ctx, c, o, value, request{op: "write update", method: "PUT", path: o.path(), contentType: "application/json", body: put})
}

// patch is a JSON merge PATCH of the label.
func (r *run) patch(ctx context.Context, c *client, o seededObject, value string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{GenLabel: value}}})
	if err != nil {
		return err
	}
	return r.write(ctx, c, o, value, request{op: "write patch", method: "PATCH", path: o.path(), contentType: "application/merge-patch+json", body: body})
}

// write sends a write and files its outcome in the ledger.
func (r *run) write(ctx context.Context, c *client, o seededObject, value string, req request) error {
	req.decode = func(body []byte) error {
		var it metaItem
		if err := json.Unmarshal(body, &it); err != nil {
			return &ProtocolError{Path: o.path(), Msg: "undecodable write answer: " + err.Error()}
		}
		if got := it.Metadata.Labels[GenLabel]; got != value {
			return &ProtocolError{Path: o.path(), Msg: fmt.Sprintf("wrote %s=%s, the answer says %q", GenLabel, value, got)}
		}
		return nil
	}
	_, err := c.do(ctx, req)
	if errors.Is(err, errBudget) || errors.Is(err, errRunEnded) {
		return err // not sent
	}
	switch Classify(err) {
	case ClassOK:
		r.ledger.Succeeded(o.key.String(), value)
	case ClassTransport, Class5xx, ClassProtocol:
		// Applied or not: nobody knows.
		r.ledger.Unknown(o.key.String(), value)
	}
	return err
}
