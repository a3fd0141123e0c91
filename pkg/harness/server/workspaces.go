package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

const (
	// WorkspaceReadyTimeout bounds CreateWorkspaces.
	WorkspaceReadyTimeout = 4 * time.Minute
	// WorkspaceInitTimeout is how long a new workspace may stay in
	// Initializing before CreateWorkspaces gives up on it.
	WorkspaceInitTimeout = 90 * time.Second
	// workspaceAttempts bounds the workspaces CreateWorkspaces tries per name.
	workspaceAttempts = 2
)

// StalledError says that a workspace stayed in Initializing ("Initializers
// still exist: [system:apibindings]").
type StalledError struct {
	Workspace string
	Phase     string
	After     time.Duration
}

func (e *StalledError) Error() string {
	return fmt.Sprintf("workspace root:%s still %q after %s", e.Workspace, e.Phase, e.After)
}

// StartKCPWithWorkspaces starts kcp (StartKCP) and creates the workspaces
// (CreateWorkspaces); it returns the running kcp with the workspaces' logical
// clusters, or stops kcp on an error.
func StartKCPWithWorkspaces(ctx context.Context, opts KCPOptions, names []string) (*KCP, []string, error) {
	s, err := StartKCP(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	clusters, err := s.CreateWorkspaces(ctx, names)
	if err != nil {
		_ = s.Stop()
		return nil, nil, err
	}
	return s, clusters, nil
}

// WorkspacesGVR is kcp's Workspace API.
var WorkspacesGVR = schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"}

// workspaceTypesGVR is kcp's WorkspaceType API; new workspaces are of root's
// "universal" type.
var workspaceTypesGVR = schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspacetypes"}

// waitForWorkspaceType waits until root's "universal" WorkspaceType is Ready
// with its virtual workspace URLs. kcp answers /readyz before that, and a
// workspace created earlier can stay in Initializing for good.
func waitForWorkspaceType(ctx context.Context, dc dynamic.Interface) error {
	var conds []any
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		wt, err := dc.Resource(workspaceTypesGVR).Get(ctx, "universal", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ = unstructured.NestedSlice(wt.Object, "status", "conditions")
		ready := map[string]bool{}
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["status"] == "True" {
				ready[fmt.Sprint(m["type"])] = true
			}
		}
		return ready["Ready"] && ready["VirtualWorkspaceURLsReady"], nil
	})
	if err != nil {
		return fmt.Errorf("root's WorkspaceType universal not Ready (conditions %v): %w", conds, err)
	}
	return nil
}

// CreateWorkspaces creates workspaces under root through kcp's Workspace API
// (tenancy.kcp.io, the default type), waits until each is Ready, and returns
// their logical cluster names (what kcp.io/cluster says on their objects), in
// the order of names: WorkspaceCreator.Create as kcp-admin on this kcp.
func (s *KCP) CreateWorkspaces(ctx context.Context, names []string) ([]string, error) {
	// Workspaces are created as kcp-admin (context base), not as the shard
	// admin: kcp records a workspace's creator only for users like it, and
	// its workspace initializer acts as that creator; a workspace the shard
	// admin creates has none and can stay in Initializing for good ("had no
	// createdBy recorded").
	cfg, err := s.contextConfig("base")
	if err != nil {
		return nil, fmt.Errorf("the kcp-admin credentials in %s: %w", s.KubeconfigPath(), err)
	}
	return WorkspaceCreator{Config: cfg, Exited: s.Done(), Progress: s.opts.Progress}.Create(ctx, names)
}

// WorkspaceCreator creates workspaces under root at one kcp endpoint: a
// shard, or the front-proxy of a sharded kcp.
type WorkspaceCreator struct {
	// Config is kcp-admin (a user kcp records as a workspace's creator) at
	// the endpoint's base URL.
	Config *rest.Config
	// Exited, when set, is closed when the server behind Config exits.
	Exited <-chan struct{}
	// ShardSelector, when set, places the workspaces
	// (spec.location.selector.matchLabels) on a shard with these labels.
	ShardSelector map[string]string
	// Progress receives a line when a stalled workspace is replaced; nil discards.
	Progress func(format string, args ...any)
}

// Create first waits for root's "universal" WorkspaceType to be Ready, then
// creates each workspace root:<name> and waits until it is Ready. Existing
// workspaces are reused. A workspace still Initializing after
// WorkspaceInitTimeout is replaced once (name-r1), then a *StalledError; it
// gives up after WorkspaceReadyTimeout in all.
func (w WorkspaceCreator) Create(ctx context.Context, names []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, WorkspaceReadyTimeout)
	defer cancel()
	cfg := rest.CopyConfig(w.Config)
	cfg.Host = strings.TrimSuffix(cfg.Host, "/") + "/clusters/root"
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := waitForWorkspaceType(ctx, dc); err != nil {
		return nil, err
	}
	ws := dc.Resource(WorkspacesGVR)
	var clusters []string
	for _, base := range names {
		var cluster string
		var err error
		for attempt := range workspaceAttempts {
			name := base
			if attempt > 0 {
				name = fmt.Sprintf("%s-r%d", base, attempt)
				if w.Progress != nil {
					w.Progress("%v; creating root:%s in its place", err, name)
				}
			}
			cluster, err = w.createWorkspace(ctx, ws, name)
			var stalled *StalledError
			if err == nil || !errors.As(err, &stalled) {
				break
			}
		}
		if err != nil {
			return nil, err
		}
		clusters = append(clusters, cluster)
	}
	return clusters, nil
}

// createWorkspace creates root:name (or finds it) and waits up to
// WorkspaceInitTimeout for it to be Ready, returning its logical cluster.
func (w WorkspaceCreator) createWorkspace(ctx context.Context, ws dynamic.ResourceInterface, name string) (string, error) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tenancy.kcp.io/v1alpha1",
		"kind":       "Workspace",
		"metadata":   map[string]any{"name": name},
	}}
	if len(w.ShardSelector) > 0 {
		labels := map[string]any{}
		for k, v := range w.ShardSelector {
			labels[k] = v
		}
		obj.Object["spec"] = map[string]any{"location": map[string]any{"selector": map[string]any{"matchLabels": labels}}}
	}
	if _, err := ws.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating workspace root:%s: %w", name, err)
	}
	var phase, cluster string
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, WorkspaceInitTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-w.Exited:
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
