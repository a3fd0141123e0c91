package hammer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
	kcpmetadata "github.com/kcp-dev/kcp/pkg/metadata"
)

// lister runs one lister until the run ends, its budget is spent or the
// server dies. Each LIST goes to the next resource (and, in cluster scope, the
// next logical cluster).
func (r *run) lister(ctx context.Context, c *client, v listerShape) {
	for i := 0; ; i++ {
		res := r.opts.Resources[i%len(r.opts.Resources)]
		cluster := r.scopeCluster(i / len(r.opts.Resources))
		var err error
		if v.KCPMetadataClient {
			err = r.listViaKCPMetadataClient(ctx, c, v, res, cluster)
		} else {
			err = r.listHTTP(ctx, c, v, res, cluster)
		}
		if r.stopped(ctx, err) {
			return
		}
	}
}

// scopeCluster is where the i-th partial request goes: "*" in wildcard scope,
// else the logical clusters in turn.
func (r *run) scopeCluster(i int) string {
	if r.opts.Scope == ScopeWildcard {
		return "*"
	}
	return r.opts.Clusters[i%len(r.opts.Clusters)]
}

// stopped says whether a worker must end after err.
func (r *run) stopped(ctx context.Context, err error) bool {
	if errors.Is(err, errBudget) || errors.Is(err, errRunOver) || errors.Is(err, errRunEnded) || ctx.Err() != nil || r.death.dead() {
		return true
	}
	if err != nil && Classify(err) == ClassTransport {
		// Don't spin on a server that refuses connections while the death
		// check decides.
		select {
		case <-ctx.Done():
			return true
		case <-time.After(20 * time.Millisecond):
		}
	}
	return false
}

// listHTTP sends one LIST (all its pages) with a plain HTTP client: a
// partial-metadata LIST, whose every item it checks, or a full-object JSON
// LIST (json listers: the control load a stock kcp survives), whose items
// check (a), about partial items, does not judge; check (b) reads every
// object back after the load.
func (r *run) listHTTP(ctx context.Context, c *client, v listerShape, res Resource, cluster string) error {
	path := res.collectionPath(cluster, "")
	cont := ""
	for {
		q := v.Query(requestshape.Params{Limit: r.opts.PageSize, Continue: cont})
		var partial partialList
		var full metaList
		decode := func(body []byte) error { return decodePartialList(path, body, v.Accept.MetaVersion, &partial) }
		if !v.Accept.Partial() {
			decode = func(body []byte) error { return decodeFullList(path, body, &full) }
		}
		_, err := c.do(ctx, request{op: v.opName(), method: "GET", path: path, query: q, accept: v.AcceptHeader(), decode: decode})
		if err != nil {
			return err
		}
		for _, it := range partial.Items {
			r.observe(v.opName(), checks.Lister, res, cluster, it.Metadata)
		}
		r.partialItems.Add(int64(len(partial.Items)))
		cont = partial.Metadata.Continue + full.Metadata.Continue
		if !v.Paged || cont == "" {
			return nil
		}
	}
}

func decodePartialList(path string, body []byte, metaVersion string, into *partialList) error {
	if err := json.Unmarshal(body, into); err != nil {
		return &ProtocolError{Path: path, Msg: "undecodable partial list: " + err.Error()}
	}
	if into.Kind != "PartialObjectMetadataList" || into.APIVersion != "meta.k8s.io/"+metaVersion {
		return &ProtocolError{Path: path, Msg: fmt.Sprintf("asked for PartialObjectMetadataList meta.k8s.io/%s, got %s %s", metaVersion, into.Kind, into.APIVersion)}
	}
	return nil
}

// kcpMetadataClient is built once per run: kcp's own metadata client.
func (r *run) kcpMetadataClient() (kcpdynamic.ClusterInterface, error) {
	r.kcpMetaOnce.Do(func() {
		r.kcpMeta, r.kcpMetaErr = kcpmetadata.NewDynamicMetadataClusterClientForConfig(r.c.cfg)
		if r.kcpMetaErr != nil {
			r.kcpMetaErr = fmt.Errorf("kcp's metadata client: %w", r.kcpMetaErr)
		}
	})
	return r.kcpMeta, r.kcpMetaErr
}

// listViaKCPMetadataClient sends one LIST (all its pages) through
// github.com/kcp-dev/kcp/pkg/metadata, which asks for
// PartialObjectMetadataList meta.k8s.io/v1 on every LIST.
func (r *run) listViaKCPMetadataClient(ctx context.Context, c *client, v listerShape, res Resource, cluster string) error {
	mc, err := r.kcpMetadataClient()
	if err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Group: res.Group, Version: res.Version, Resource: res.Resource}
	opts := v.ListOptions(requestshape.Params{Limit: r.opts.PageSize})
	path := res.collectionPath(cluster, "")
	for {
		if c.budget != nil && !c.budget.take() {
			return errBudget
		}
		if ctx.Err() != nil {
			return errRunEnded
		}
		start := time.Now()
		list, err := kcpList(ctx, c.timeout, mc, gvr, cluster, opts)
		if err == nil && (list.GetKind() != "PartialObjectMetadataList" || list.GetAPIVersion() != "meta.k8s.io/v1") {
			err = &ProtocolError{Path: path, Msg: fmt.Sprintf("kcp's metadata client got %s %s, want PartialObjectMetadataList meta.k8s.io/v1", list.GetKind(), list.GetAPIVersion())}
		}
		if err = c.record(ctx, v.opName(), start, err); err != nil {
			return err
		}
		for i := range list.Items {
			it := &list.Items[i]
			m := itemOf(it.GetName(), it.GetNamespace(), it.GetAnnotations())
			r.observe(v.opName(), checks.Lister, res, cluster, m)
		}
		r.partialItems.Add(int64(len(list.Items)))
		opts = v.ListOptions(requestshape.Params{Limit: r.opts.PageSize, Continue: list.GetContinue()})
		if !v.Paged || opts.Continue == "" {
			return nil
		}
	}
}

func kcpList(ctx context.Context, timeout time.Duration, mc kcpdynamic.ClusterInterface, gvr schema.GroupVersionResource, cluster string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if cluster == "*" {
		return mc.Resource(gvr).List(ctx, opts)
	}
	return mc.Cluster(logicalcluster.NewPath(cluster)).Resource(gvr).List(ctx, opts)
}
