package kcpserver

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

const (
	// WorkspaceReadyTimeout bounds CreateWorkspaces.
	WorkspaceReadyTimeout = 5 * time.Minute
	// WorkspaceAttemptTimeout is how long one workspace may stay in
	// Initializing before CreateWorkspaces gives up on it and creates another
	// under a new name. Right after `kcp start`, kcp v0.32.3 sometimes leaves
	// a new workspace in Initializing for good ("Initializers still exist:
	// [system:apibindings]"); a workspace created a little later is Ready in
	// seconds.
	WorkspaceAttemptTimeout = 75 * time.Second
	// workspaceAttempts bounds the workspaces tried per name.
	workspaceAttempts = 3
)

// WorkspacesGVR is kcp's Workspace API.
var WorkspacesGVR = schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"}

// CreateWorkspaces creates workspaces under root through kcp's Workspace API
// (tenancy.kcp.io, the default type), waits until each is Ready, and returns
// their logical cluster names (what kcp.io/cluster says on their objects), in
// the order of names. Existing Ready workspaces are reused. A workspace still
// Initializing after WorkspaceAttemptTimeout is left alone and another is
// created in its place (name-r1, name-r2); it gives up after
// WorkspaceReadyTimeout or workspaceAttempts tries per name.
func (s *Server) CreateWorkspaces(ctx context.Context, names []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, WorkspaceReadyTimeout)
	defer cancel()
	dc, err := dynamic.NewForConfig(s.ClusterConfig("root"))
	if err != nil {
		return nil, err
	}
	ws := dc.Resource(WorkspacesGVR)
	var clusters []string
	for _, base := range names {
		var cluster string
		var lastErr error
		for attempt := range workspaceAttempts {
			name := base
			if attempt > 0 {
				name = fmt.Sprintf("%s-r%d", base, attempt)
				s.progressf("workspace root:%s: %v; creating root:%s instead", base, lastErr, name)
			}
			cluster, lastErr = s.createWorkspace(ctx, ws, name)
			if lastErr == nil || ctx.Err() != nil {
				break
			}
		}
		if cluster == "" {
			return nil, fmt.Errorf("workspace root:%s: %w", base, lastErr)
		}
		clusters = append(clusters, cluster)
	}
	return clusters, nil
}

// createWorkspace creates root:name (or finds it) and waits up to
// WorkspaceAttemptTimeout for it to be Ready, returning its logical cluster.
func (s *Server) createWorkspace(ctx context.Context, ws dynamic.ResourceInterface, name string) (string, error) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tenancy.kcp.io/v1alpha1",
		"kind":       "Workspace",
		"metadata":   map[string]any{"name": name},
	}}
	if _, err := ws.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating workspace root:%s: %w", name, err)
	}
	var phase, cluster string
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, WorkspaceAttemptTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-s.Done():
			return false, fmt.Errorf("kcp exited while workspace root:%s was being created", name)
		default:
		}
		obj, err := ws.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			lastErr = err
			return false, nil
		}
		phase, _, _ = unstructured.NestedString(obj.Object, "status", "phase")
		cluster, _, _ = unstructured.NestedString(obj.Object, "spec", "cluster")
		return phase == "Ready" && cluster != "", nil
	})
	if err != nil {
		return "", fmt.Errorf("not Ready after %s (phase %q, last error %v): %w", WorkspaceAttemptTimeout, phase, lastErr, err)
	}
	return cluster, nil
}

func (s *Server) progressf(format string, args ...any) {
	if s.opts.Progress != nil {
		s.opts.Progress(format, args...)
	}
}
