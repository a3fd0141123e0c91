package server

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// ShardLabel is the label PlaceWorkspaces puts on kcp's Shard objects so that
// a Workspace's location selector can name one shard.
const ShardLabel = "kcp-carry.io/shard"

var (
	shardsGVR          = schema.GroupVersionResource{Group: "core.kcp.io", Version: "v1alpha1", Resource: "shards"}
	logicalClustersGVR = schema.GroupVersionResource{Group: "core.kcp.io", Version: "v1alpha1", Resource: "logicalclusters"}
)

// PlaceWorkspaces creates workspaces root:<name> through the front-proxy
// with kcp's Workspace API, placed on shard i (a location selector on the
// label ShardLabel, which it first sets on the shard's Shard object in root),
// and returns their logical clusters. It then checks the placement on the
// shard itself: each logical cluster's LogicalCluster object must be served
// by shard i's own endpoint.
func (t *Topology) PlaceWorkspaces(ctx context.Context, i int, names []string) ([]string, error) {
	name := ShardName(i)
	root := t.FrontProxyConfig()
	root.Host += "/clusters/root"
	dc, err := dynamic.NewForConfig(root)
	if err != nil {
		return nil, err
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, ShardLabel, name)
	// The Shard object appears once the shard has registered with root.
	if err := retry.OnError(retry.DefaultBackoff, func(error) bool { return true }, func() error {
		_, err := dc.Resource(shardsGVR).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}); err != nil {
		return nil, fmt.Errorf("labelling Shard %s in root through the front-proxy: %w", name, err)
	}
	exited := t.Shards[i].Done()
	clusters, err := WorkspaceCreator{Config: t.FrontProxyConfig(), Exited: exited, ShardSelector: map[string]string{ShardLabel: name},
		Progress: t.opts.Progress}.Create(ctx, names)
	if err != nil {
		return nil, fmt.Errorf("creating workspaces on shard %s: %w", name, err)
	}
	for _, cluster := range clusters {
		if err := t.servedBy(ctx, i, cluster); err != nil {
			return nil, err
		}
	}
	t.opts.Progress("workspaces root:%s on shard %s: logical clusters %s", strings.Join(names, ", root:"), name, strings.Join(clusters, ", "))
	return clusters, nil
}

// servedBy checks that shard i itself holds logical cluster cluster.
func (t *Topology) servedBy(ctx context.Context, i int, cluster string) error {
	cfg, err := t.ShardConfig(i)
	if err != nil {
		return err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Host += "/clusters/" + cluster
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := dc.Resource(logicalClustersGVR).Get(ctx, "cluster", metav1.GetOptions{}); err != nil {
		return fmt.Errorf("logical cluster %s is not on shard %s (its LogicalCluster on %s): %w", cluster, ShardName(i), t.Shards[i].URL(), err)
	}
	return nil
}

// Workspace is a logical cluster and the shard that holds it.
type Workspace struct {
	Shard   int
	Cluster string
}

// Placement is the logical clusters of each shard's workspaces, root first
// on shard 0.
type Placement [][]string

// PlaceAll places names[i] on shard i (PlaceWorkspaces) and adds root to
// shard 0's clusters.
func (t *Topology) PlaceAll(ctx context.Context, names [][]string) (Placement, error) {
	if len(names) != len(t.Shards) {
		return nil, fmt.Errorf("workspaces for %d shards, the topology has %d", len(names), len(t.Shards))
	}
	out := make(Placement, len(names))
	for i := range names {
		clusters, err := t.PlaceWorkspaces(ctx, i, names[i])
		if err != nil {
			return nil, err
		}
		if i == 0 {
			clusters = append([]string{"root"}, clusters...)
		}
		out[i] = clusters
	}
	return out, nil
}

// Workspaces lists every logical cluster with its shard.
func (p Placement) Workspaces() []Workspace {
	var out []Workspace
	for i, clusters := range p {
		for _, c := range clusters {
			out = append(out, Workspace{Shard: i, Cluster: c})
		}
	}
	return out
}

// All is every logical cluster, shard by shard.
func (p Placement) All() []string {
	var out []string
	for _, clusters := range p {
		out = append(out, clusters...)
	}
	return out
}
