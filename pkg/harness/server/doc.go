// Package server starts every server the suites and the commands run, each
// as a child process on 127.0.0.1, in the shape of kcp's sdk/testing/server:
//
//   - Server is one child process (Start, Command): its own process group,
//     killed by the kernel if this process dies, stopped with SIGTERM and then
//     SIGKILL after a grace period (exec.Cmd's Cancel and WaitDelay), its
//     stderr kept for the fatal runtime errors and race reports ParseFatal
//     finds, and the client config it was seen ready with.
//   - The test shard (cmd/testshard, a server built from kcp's fork, not
//     kcp): ShardBuilder builds it once per ShardBuild (pristine fork with
//     GOWORK=off, or the patched overlay through go.work; optionally -race),
//     StartShard runs it in its own temporary directory until its ready line.
//   - A single kcp (StartKCP, `kcp start`) in a root directory that outlives
//     the process, so a second start on it is a restart of the same shard;
//     CreateWorkspaces and WorkspaceCreator make workspaces through kcp's
//     Workspace API.
//   - kcp's sharded topology (StartTopology): a cache server, N shards,
//     standalone virtual workspaces and the front-proxy, each its own Server,
//     with the flags and certificate layout of kcp's cmd/sharded-test-server.
//
// Every launcher waits in one loop (waitReady, apimachinery's wait) for its
// server to be ready. The package reads no environment variable and does not
// import testing: commands use it too. Its testing.T wrappers, and the few
// environment overrides a developer sets, are in servertest.
package server
