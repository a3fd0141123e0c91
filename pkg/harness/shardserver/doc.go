// Package shardserver builds the test shard (cmd/testshard: a server built
// from kcp's fork, not kcp) and runs it as a child process on 127.0.0.1, the
// way pkg/harness/kcpserver runs a real kcp: BuildShard builds it once per Variant
// (pristine fork with GOWORK=off, or the patched overlay through go.work;
// optionally -race), Start runs it in its own temporary directory and process
// group (pkg/harness/process) and waits for its ready line, and the Shard keeps its
// whole stderr: when it dies, Stderr and Fatal are the evidence. It does not
// import testing; test/fixture wraps it for tests (StartT, ShardBinaryT).
//
// Environment: KCP_CARRY_SHARD_BIN_DIR, KCP_CARRY_SHARD_PATCHED,
// KCP_CARRY_SHARD_PRISTINE, KCP_CARRY_SHARD_PATCHED_RACE,
// KCP_CARRY_SHARD_PRISTINE_RACE (BuildShard); KCP_CARRY_SHARD_READY_TIMEOUT,
// KCP_CARRY_SHARD_KEEP_DIR, KCP_CARRY_SHARD_VERBOSE (Start).
package shardserver
