package versionstamp

import (
	"testing"
	"time"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

func TestLDFlags(t *testing.T) {
	v := Info{
		KubeVersion: "v1.36.0",
		KCPDescribe: "v0.32.3",
		GitCommit:   "08be0a1c8de2",
		TreeState:   "clean",
		CarryID:     "0123456789",
		BuildDate:   time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
	}
	if got, want := v.GitVersion(), "v1.36.0+kcp-v0.32.3-carry-0123456789"; got != want {
		t.Errorf("GitVersion() = %q, want %q", got, want)
	}
	flags, err := v.LDFlags()
	if err != nil {
		t.Fatal(err)
	}
	testfs.ContainsAll(t, "LDFlags()", flags,
		"-X k8s.io/component-base/version.gitVersion=v1.36.0+kcp-v0.32.3-carry-0123456789",
		"-X k8s.io/client-go/pkg/version.gitMajor=1",
		"-X k8s.io/client-go/pkg/version.gitMinor=36",
		"-X k8s.io/component-base/version.gitCommit=08be0a1c8de2",
		"-X k8s.io/component-base/version.gitTreeState=clean",
		"-X k8s.io/client-go/pkg/version.buildDate=2026-11-30T09:00:00Z",
		"-extldflags '-static'",
	)

	v.KubeVersion = "master"
	if _, err := v.LDFlags(); err == nil {
		t.Error("LDFlags() accepted a k8s.io/kubernetes version without major.minor")
	}
}

func TestReadCarryReadsGitVersion(t *testing.T) {
	v := Info{KubeVersion: "v1.36.0", KCPDescribe: "v0.32.3-4-gdac74f5955f1", CarryID: "a1b2c3d4e5"}
	id, describe, ok := ReadCarry(v.GitVersion())
	if !ok || id != v.CarryID || describe != v.KCPDescribe {
		t.Errorf("ReadCarry(%q) = %q, %q, %t; want %q, %q, true", v.GitVersion(), id, describe, ok, v.CarryID, v.KCPDescribe)
	}
	v.Pristine = true
	for _, gv := range []string{v.GitVersion(), "v1.36.0+kcp-v0.32.3", "v0.0.0-master+$Format:%H$", ""} {
		if id, _, ok := ReadCarry(gv); ok {
			t.Errorf("ReadCarry(%q) = %q, true; want no carry build", gv, id)
		}
	}
}
