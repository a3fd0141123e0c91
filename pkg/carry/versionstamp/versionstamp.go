// Package versionstamp is the version string carry build stamps into kcp's
// binaries and reads back from a server's /version: kcp's own ldflags with a
// mark for the carry's id (or for a pristine build). It is apart from
// kcpbuild so that a reader of /version (carry scrub) links no build logic.
package versionstamp

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Info is what kcp's Makefile stamps into its binaries through
// k8s.io/client-go/pkg/version and k8s.io/component-base/version, plus the
// carry's own mark.
type Info struct {
	// KubeVersion is the k8s.io/kubernetes requirement of kcp's go.mod
	// (kcp's Makefile takes gitVersion, gitMajor and gitMinor from it).
	KubeVersion string
	// KCPDescribe is `git describe --tags --match=v*` of the kcp commit, or
	// the release tag in module mode.
	KCPDescribe string
	// GitCommit is the short kcp commit hash.
	GitCommit string
	// TreeState is "clean" or "dirty".
	TreeState string
	// CarryID identifies the patch series built in (a digest of its files).
	CarryID string
	// Pristine marks a build without the carry.
	Pristine bool
	// Race marks a build with the race detector (-race, cgo on): its
	// gitVersion ends in "-race" and it links dynamically.
	Race      bool
	BuildDate time.Time
}

var kubeVersionRE = regexp.MustCompile(`^v(\d+)\.(\d+)`)

// GitVersion is kcp's `<kubernetes version>+kcp-<describe>` with a suffix that
// marks a build carrying our patches (or a pristine one built alongside), so `kcp --version` and /version tell a
// patched shard from a release one.
// A race build (Info.Race) ends in "-race" after either mark.
func (v Info) GitVersion() string {
	s := fmt.Sprintf("%s+kcp-%s-carry-%s", v.KubeVersion, v.KCPDescribe, v.CarryID)
	if v.Pristine {
		s = fmt.Sprintf("%s+kcp-%s-pristine", v.KubeVersion, v.KCPDescribe)
	}
	if v.Race {
		s += raceMark
	}
	return s
}

// raceMark ends the gitVersion of a race build.
const raceMark = "-race"

// IsRaceBuild says whether a server's gitVersion (/version) is that of a
// build with the race detector, carried or pristine.
func IsRaceBuild(gitVersion string) bool {
	return strings.HasSuffix(gitVersion, raceMark) && strings.Contains(gitVersion, "+kcp-")
}

// carryStampRE matches what GitVersion stamps into a build with the carry:
// "<kubernetes version>+kcp-<describe>-carry-<id>", the id a digest of the series.
// A race build's "-race" after the id is allowed.
var carryStampRE = regexp.MustCompile(`\+kcp-(.+)-carry-([0-9a-z]+)(?:-race)?$`)

// ReadCarry reads a server's gitVersion (/version): the carry's id and the kcp
// describe when GitVersion stamped it into a build with the carry, ok=false for
// any other build (a kcp release, a pristine build, a test shard).
func ReadCarry(gitVersion string) (carryID, kcpDescribe string, ok bool) {
	m := carryStampRE.FindStringSubmatch(gitVersion)
	if m == nil {
		return "", "", false
	}
	return m[2], m[1], true
}

// LDFlags returns the -ldflags value kcp's Makefile would use, with the
// carry-marked gitVersion.
func (v Info) LDFlags() (string, error) {
	m := kubeVersionRE.FindStringSubmatch(v.KubeVersion)
	if m == nil {
		return "", fmt.Errorf("k8s.io/kubernetes version %q is not of the form vMAJOR.MINOR...", v.KubeVersion)
	}
	values := []struct{ name, value string }{
		{"gitCommit", v.GitCommit},
		{"gitTreeState", v.TreeState},
		{"gitVersion", v.GitVersion()},
		{"gitMajor", m[1]},
		{"gitMinor", m[2]},
		{"buildDate", v.BuildDate.UTC().Format("2006-01-02T15:04:05Z")},
	}
	var flags []string
	for _, pkg := range []string{"k8s.io/client-go/pkg/version", "k8s.io/component-base/version"} {
		for _, kv := range values {
			flags = append(flags, fmt.Sprintf("-X %s.%s=%s", pkg, kv.name, kv.value))
		}
	}
	if !v.Race {
		// The race runtime needs cgo and the system's C library, which does
		// not link statically; a race build is for this machine only.
		flags = append(flags, "-extldflags '-static'")
	}
	return strings.Join(flags, " "), nil
}
