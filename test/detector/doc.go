// Package detector is the live suite of the watch-cache mutation
// detector (pkg/harness/cachemutation) against test shards (pkg/harness/server, servertest) that run
// it (KCP_CARRY_CACHE_MUTATION_DETECTOR=true):
//
//   - the positive control: on the pristine fork, ONE wildcard
//     partial-metadata LIST of ClusterRoles, at concurrency 1, is reported as
//     a write of metadata.annotations["kcp.io/original-api-version"] into the
//     watch cache, for every listed object;
//   - the matrix (requestshape.Matrix): on the patched fork (-race unless
//     KCP_CARRY_SHARD_RACE=0, as `make test` sets), LIST, GET and WATCH
//     of ClusterRoles and ConfigMaps across Accept types, wildcard and
//     single-cluster scope, resourceVersion "" and "0", selectors and
//     pagination produce no finding, while the detector demonstrably
//     compared cache-shared objects for every verb;
//   - the audit of the fork's other read paths (docs/read-path-audit.md):
//     what the detector says for each path the test shard can serve on the
//     pristine fork, and, in-process, for apiextensions'
//     kcpWildcardPartialMetadataConverter, which the shard cannot serve.
//
// It uses the two shard builds the e2e suite uses (pristine, patched),
// so it adds no build. -short skips the live tests.
package detector
