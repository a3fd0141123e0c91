package kcpserver

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// WorkspaceReadyTimeout bounds CreateWorkspaces.
const WorkspaceReadyTimeout = 3 * time.Minute

// WorkspacesGVR is kcp's Workspace API.
var WorkspacesGVR = schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"}

// CreateWorkspaces creates workspaces under root through kcp's Workspace API
// (tenancy.kcp.io, the default type), waits until each is Ready, and returns
// their logical cluster names (what kcp.io/cluster says on their objects), in
// the order of names. Existing workspaces are reused. It gives up after
// WorkspaceReadyTimeout.
func (s *Server) CreateWorkspaces(ctx context.Context, names []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, WorkspaceReadyTimeout)
	defer cancel()
	dc, err := dynamic.NewForConfig(s.ClusterConfig("root"))
	if err != nil {
		return nil, err
	}
	ws := dc.Resource(WorkspacesGVR)
	for _, name := range names {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "tenancy.kcp.io/v1alpha1",
			"kind":       "Workspace",
			"metadata":   map[string]any{"name": name},
		}}
		if _, err := ws.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating workspace root:%s: %w", name, err)
		}
	}
	var clusters []string
	for _, name := range names {
		var phase string
		for {
			obj, err := ws.Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				phase, _, _ = unstructured.NestedString(obj.Object, "status", "phase")
				cluster, _, _ := unstructured.NestedString(obj.Object, "spec", "cluster")
				if phase == "Ready" && cluster != "" {
					clusters = append(clusters, cluster)
					break
				}
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("workspace root:%s not Ready (phase %q): %w (last error: %v)", name, phase, ctx.Err(), err)
			case <-s.Done():
				return nil, fmt.Errorf("kcp exited while workspace root:%s was being created", name)
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	return clusters, nil
}
