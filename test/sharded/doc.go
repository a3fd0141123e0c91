// Package sharded is the carry's suite in kcp's sharded topology: two kcp
// shards, the cache server, standalone virtual workspaces (one per shard) and
// the front-proxy, each its own process (pkg/harness/server, StartTopology), built from
// KCP_SOURCE by `make sharded` as bin/<server> (with the carry) and
// bin/<server>-pristine (stock). With the carry, the seed load on both shards'
// own endpoints at once, and a wildcard partial-metadata load on the cache
// server, leave every server alive and every check clean while every
// workspace keeps answering through the front-proxy. Stock, the same load on
// shard 1 alone kills shard 1 with a concurrent map error and nothing else:
// shard 0's workspaces keep answering through the front-proxy, shard 1's get
// its error. The tests skip without KCP_SOURCE and fail when it is set and a
// binary is missing; the variant of each binary comes from its build info.
//
// Environment:
//
//	KCP_SOURCE                         the kcp tree the binaries were built from
//	KCP_CARRY_SHARDED_REDUCED=1        CI's reduced form: the carried topology only, a 10 s load
//	KCP_CARRY_SHARDED_LOAD_DURATION    bound of each shard's load (default 20s, reduced 10s)
package sharded
