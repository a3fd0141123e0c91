// Package e2e is the live regression suite of the kcp.io/original-api-version
// carry: pkg/harness/hammer against test shards (pkg/harness/server) built from the patched
// fork (must survive and stay correct; under -race unless KCP_CARRY_SHARD_RACE=0,
// as `make test` sets: `make test-race` runs them with it) and from the pristine fork
// (must die, and one request must pollute the watch cache: the positive
// control), with controls (watch cache off, non-wildcard requests) that show
// the wildcard watch-cache path is what kills it. The real-kcp tests
// (TestRealKCP*) assert the same on kcp v0.32.3 itself, built by `make` from
// KCP_SOURCE as bin/kcp (patched) and bin/kcp-pristine: they skip without
// KCP_SOURCE and fail when it is set and a binary is missing. The variant a
// binary is comes from its build info, not from the environment.
//
// Environment:
//
//	KCP_CARRY_E2E_LOAD_DURATION   bound of each load (default 20s)
//	KCP_CARRY_E2E_MAX_REQUESTS    request budget of each load (default 200000)
//	KCP_SOURCE                    the kcp tree bin/kcp and bin/kcp-pristine were built from
//	KCP_BINARY                    another kcp binary; the test of its variant (build info) runs
//
// and servertest's (KCP_CARRY_SHARD_VERBOSE, _KEEP_DIR, _READY_TIMEOUT: docs/harness.md).
package e2e
