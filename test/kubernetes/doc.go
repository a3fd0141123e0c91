// Package kubernetes runs Kubernetes' own integration tests
// (k8s.io/kubernetes test/integration) with client-go's cache mutation
// detector on, on client-go as released and as the upstream pull requests
// of upstream-patches/kubernetes change it: what the detectors cost there,
// and whether they report (make test-k8s-integration, docs/detector.md).
package kubernetes
