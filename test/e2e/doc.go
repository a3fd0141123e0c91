// Package e2e is the live regression suite of the kcp.io/original-api-version
// carry: pkg/hammer against test shards (test/fixture) built from the patched
// fork (must survive and stay correct, under -race) and from the pristine fork
// (must die, and one request must pollute the watch cache: the positive
// control), with controls (watch cache off, non-wildcard requests) that show
// the wildcard watch-cache path is what kills it. Optionally, the same against
// a real kcp binary (KCP_BINARY or bin/kcp).
//
// Environment:
//
//	KCP_CARRY_E2E_LOAD_DURATION   bound of each load (default 20s)
//	KCP_CARRY_E2E_MAX_REQUESTS    request budget of each load (default 200000)
//	KCP_BINARY                    a kcp binary for TestRealKCP (default <repo>/bin/kcp)
//	KCP_BINARY_VARIANT            "patched" (default) or "pristine": what TestRealKCP expects
//	KCP_CARRY_E2E_KCP_CLUSTERS    logical clusters for TestRealKCP (default "root")
//
// and test/fixture's (prebuilt shard binaries, verbose shard logs).
package e2e
