// Package kcpscripts runs kcp's own scripts, as kcp-patches/ changes them,
// on scratch copies of real kcp trees (KCP_SOURCE, KCP_MAIN_SOURCE; each
// subtest skips with a line naming its variable when it is unset), without
// the network and without building kcp:
//
//   - hack/bump-k8s.sh (kcp-patches/0-bump-k8s-script): with BRANCH a fork
//     pseudo-version it moves every github.com/kcp-dev/kubernetes replace of
//     kcp's three go.mod files to that commit and changes nothing else; no
//     BRANCH, a malformed version, or a fork replace whose version names no
//     commit, is refused before any file changes. The positive control:
//     kcp's script as shipped leaves the staging modules on the old commit.
//     And kcp's rebasing guide's two runs, as the pull request leaves the
//     guide (the contributor's fork, then kcp-dev's, nothing between them),
//     end where one run to kcp-dev's commit ends, and the guide's check
//     finds none of the contributor's replaces left, in both of BRANCH's
//     forms: the fork commits' pseudo-versions, and the guide's own branches,
//     which the script resolves with go list from local git repositories
//     standing in for the two forks (git's url.insteadOf). With the guide
//     and script as kcp ships them, the replaces stay on the contributor's
//     fork.
//
// The scripts need bash, git and jq; a missing one fails the test.
package kcpscripts
