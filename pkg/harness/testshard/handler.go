package testshard

import (
	"net/http"

	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericapiserver "k8s.io/apiserver/pkg/server"

	kcpfilters "github.com/kcp-dev/kcp/pkg/server/filters"
)

// buildHandlerChain wraps the API handler the way kcp v0.32.3's shard does
// (pkg/server/config.go, BuildHandlerChainFunc), minus what needs kcp's
// informers, workspaces or front proxy. Listed from the outside in:
//
//	WithAcceptHeader                 (kcp) remembers Accept: PartialObjectMetadata(List)
//	WithClusterScope                 (kcp) /clusters/<name>|*/... -> request.Cluster, path stripped;
//	                                 kcp's shard uses WithLocalProxy here, which does the same for
//	                                 logical cluster names and "*" but also resolves workspace paths
//	                                 through its index (not linkable here)
//	WithShardLevelPaths              (kcp) /metrics only at the top, 501 under /clusters/<name>/
//	WithClusterNameShapeInvariant    (kcp) rejects path-shaped cluster names
//	WithAuditInit
//	WithAuditEventClusterAnnotation  (kcp) without a LogicalCluster informer (nil, as kcp's cache server)
//	WithWarningRecorder
//	generic chain: start .. before impersonation (request info from the stripped path, authentication)
//	generic chain: impersonation .. authorization
//	WithWildcardListWatchGuard       (kcp) only list and watch in the "*" cluster
//
// Left out, because they need kcp machinery the test shard does not have:
// WithUserAgent, WithInClusterServiceAccountRequestRewrite, WithLocalProxy's
// index, WithBlockInactiveLogicalClusters, WithPerClusterContext, the
// impersonation scoping/gatekeeper, home workspaces, WithResourceIdentity,
// deep SAR and the OpenAPI v3 per-cluster handler.
func buildHandlerChain(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
	h := http.Handler(kcpfilters.WithWildcardListWatchGuard(apiHandler))
	h = genericapiserver.DefaultBuildHandlerChainFromAuthzToCompletion(h, c)
	h = genericapiserver.DefaultBuildHandlerChainFromImpersonationToAuthz(h, c)
	h = genericapiserver.DefaultBuildHandlerChainFromStartToBeforeImpersonation(h, c)
	h = genericfilters.WithWarningRecorder(h)
	h = kcpfilters.WithAuditEventClusterAnnotation(h, nil)
	h = genericfilters.WithAuditInit(h)
	h = kcpfilters.WithClusterNameShapeInvariant(h)
	h = kcpfilters.WithShardLevelPaths(h)
	h = kcpfilters.WithClusterScope(h)
	h = kcpfilters.WithAcceptHeader(h)
	return h
}
