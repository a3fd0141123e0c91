package kcpserver

import (
	"context"
	"errors"
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
	WorkspaceReadyTimeout = 3 * time.Minute
	// WorkspaceInitTimeout is how long a new workspace may stay in
	// Initializing before CreateWorkspaces reports a StalledError.
	WorkspaceInitTimeout = 90 * time.Second
	// startAttempts bounds the kcp starts of StartWithWorkspaces.
	startAttempts = 3
)

// StalledError says that a workspace stayed in Initializing. Seen with kcp
// v0.32.3 started on a busy machine: its workspace initializer
// ("Initializers still exist: [system:apibindings]") then leaves every new
// workspace of that kcp process in Initializing, while the same root
// directory started again initializes them in seconds.
type StalledError struct {
	Workspace string
	Phase     string
	After     time.Duration
}

func (e *StalledError) Error() string {
	return fmt.Sprintf("workspace root:%s still %q after %s", e.Workspace, e.Phase, e.After)
}

// StartWithWorkspaces starts kcp (Start) and creates the workspaces
// (CreateWorkspaces). When a workspace stalls in Initializing, it stops kcp
// and starts it again on the same root directory, at most startAttempts times
// in all, and returns the running kcp with the workspaces' logical clusters.
func StartWithWorkspaces(ctx context.Context, opts Options, names []string) (*Server, []string, error) {
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		s, err := Start(ctx, opts)
		if err != nil {
			return nil, nil, err
		}
		clusters, err := s.CreateWorkspaces(ctx, names)
		if err == nil {
			return s, clusters, nil
		}
		_ = s.Stop()
		var stalled *StalledError
		if !errors.As(err, &stalled) {
			return nil, nil, err
		}
		lastErr = err
		s.progressf("kcp start %d of %d: %v; starting kcp again on %s", attempt, startAttempts, err, opts.RootDir)
	}
	return nil, nil, fmt.Errorf("after %d starts of kcp: %w", startAttempts, lastErr)
}

// WorkspacesGVR is kcp's Workspace API.
var WorkspacesGVR = schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"}

// CreateWorkspaces creates workspaces under root through kcp's Workspace API
// (tenancy.kcp.io, the default type), waits until each is Ready, and returns
// their logical cluster names (what kcp.io/cluster says on their objects), in
// the order of names. Existing workspaces are reused. A workspace still
// Initializing after WorkspaceInitTimeout is a *StalledError; it gives up
// after WorkspaceReadyTimeout in all.
func (s *Server) CreateWorkspaces(ctx context.Context, names []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, WorkspaceReadyTimeout)
	defer cancel()
	dc, err := dynamic.NewForConfig(s.ClusterConfig("root"))
	if err != nil {
		return nil, err
	}
	ws := dc.Resource(WorkspacesGVR)
	var clusters []string
	for _, name := range names {
		cluster, err := s.createWorkspace(ctx, ws, name)
		if err != nil {
			return nil, err
		}
		clusters = append(clusters, cluster)
	}
	return clusters, nil
}

// createWorkspace creates root:name (or finds it) and waits up to
// WorkspaceInitTimeout for it to be Ready, returning its logical cluster.
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
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, WorkspaceInitTimeout, true, func(ctx context.Context) (bool, error) {
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
	switch {
	case err == nil:
		return cluster, nil
	case phase == "Initializing" && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return "", &StalledError{Workspace: name, Phase: phase, After: WorkspaceInitTimeout}
	default:
		return "", fmt.Errorf("workspace root:%s not Ready (phase %q, last error %v): %w", name, phase, lastErr, err)
	}
}

func (s *Server) progressf(format string, args ...any) {
	if s.opts.Progress != nil {
		s.opts.Progress(format, args...)
	}
}
