package main

import (
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/harness/measure"
)

func TestParseArgs(t *testing.T) {
	root := t.TempDir()
	cli, err := parseArgs(nil, root, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	d := measure.DefaultOptions()
	d.Root = root
	if diff := cmp.Diff(d, cli.Options, cmp.Comparer(func(a, b func(string, ...any)) bool { return a == nil && b == nil })); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if cli.Out != filepath.Join(root, "evidence") {
		t.Errorf("out = %s", cli.Out)
	}

	if cli.RenderOnly {
		t.Error("--render-only by default")
	}
	cli, err = parseArgs([]string{"--render-only", "--duration", "3s", "--steps", "1, 3,9", "--step-lister", "v1beta1::paged", "--rounds", "1", "--clusters", "x,y", "--note", "Shared.", "--out", "o"}, root, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o := cli.Options
	if o.Duration != 3*time.Second || !cmp.Equal(o.Steps, []int{1, 3, 9}) || o.StepLister.Name() != "v1beta1::paged" || o.Rounds != 1 ||
		!cmp.Equal(o.Clusters, []string{"x", "y"}) || o.Note != "Shared." || cli.Out != "o" || !cli.RenderOnly {
		t.Errorf("parsed %+v, out %q", o, cli.Out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--steps", "1,4,2"}, "--steps: must grow"},
		{[]string{"--steps", "1,x"}, `--steps: "x" is not a number`},
		{[]string{"--steps", ""}, "--steps: no step given"},
		{[]string{"--duration", "0s"}, "--duration: must be in (0, 5m0s]"},
		{[]string{"--duration", "1h"}, "--duration: must be in (0, 5m0s]"},
		{[]string{"--step-lister", "v3:0"}, `--step-lister: request shape "v3:0": accept "v3" is not kcp or one of`},
		{[]string{"--rounds", "0"}, "--rounds: must be in [1, 20]"},
		{[]string{"--listers", "0"}, "--listers: must be in [1, 64]"},
		{[]string{"--objects", "0"}, "--objects: must be in [1, 1000]"},
		{[]string{"--clusters", "a/b"}, `--clusters: "a/b" is not a logical cluster name`},
		{[]string{"--max-requests", "-1"}, "--max-requests: must be positive"},
		{[]string{"--out", ""}, "--out: empty"},
		{[]string{"extra"}, `unexpected arguments ["extra"]`},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"--kcp-patched", "bin/kcp"}, "--kcp-patched and --kcp-pristine go together"},
		{[]string{"--kcp-only"}, "--kcp-only needs --kcp-patched and --kcp-pristine"},
		{[]string{"--kcp-only", "--kcp-patched", "a", "--kcp-pristine", "b", "--sharded-only", "--sharded-bin", "bin"}, "--kcp-only and --sharded-only exclude each other"},
		{[]string{"--kcp-patched", "a", "--kcp-pristine", "b", "--kcp-rounds", "0"}, "--kcp-rounds: must be in [1, 50]"},
		{[]string{"--kcp-patched", "a", "--kcp-pristine", "b", "--kcp-lister", "kcp:0"}, "--kcp-lister: want a plain v1 or v1beta1 lister"},
		{[]string{"--kcp-patched", "a", "--kcp-pristine", "b", "--kcp-workspaces", "0"}, "--kcp-workspaces: must be in [1, 20]"},
		{[]string{"--kcp-patched", "a", "--kcp-pristine", "b", "--kcp-annotations", "3,x"}, `--kcp-annotations: "x" is not a number`},
		{[]string{"--kcp-patched", "a", "--kcp-pristine", "b", "--kcp-annotations", "3,101"}, "--kcp-annotations: each must be in [0, 100], got 101"},
		{[]string{"--kcp-patched", "a", "--kcp-pristine", "b", "--kcp-annotations", ","}, "--kcp-annotations: want 1 to 4 counts, got 0"},
	} {
		if _, err := parseArgs(tc.args, root, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
	if cli.KCP != nil {
		t.Error("a real-kcp section without --kcp-patched")
	}
	cli, err = parseArgs([]string{"--kcp-patched", "bin/kcp", "--kcp-pristine", "bin/kcp-pristine", "--kcp-objects", "10000", "--kcp-workspaces", "3", "--kcp-annotations", "3,18", "--kcp-rounds", "6", "--kcp-lister", "v1beta1:"}, root, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if r := cli.KCP.Ratio; cli.KCP.PatchedBinary != "bin/kcp" || cli.KCP.PristineBinary != "bin/kcp-pristine" || r.Objects != 10000 || r.Workspaces != 3 || !slices.Equal(r.Annotations, []int{3, 18}) || r.Rounds != 6 || r.Lister.Name() != "v1beta1:" {
		t.Errorf("real kcp options %+v", cli.KCP)
	}
	if _, err := parseArgs([]string{"--help"}, root, io.Discard); err != pflag.ErrHelp {
		t.Errorf("--help: %v", err)
	}
}
