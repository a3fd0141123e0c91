package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
)

func TestParseArgs(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "admin.kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- name: base
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
- name: root
  cluster: {server: "https://127.0.0.1:6443/clusters/root", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: secret}
contexts:
- name: shard-base
  context: {cluster: base, user: admin}
- name: root
  context: {cluster: root, user: admin}
current-context: root
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cli, err := parseArgs([]string{"--kubeconfig", kc, "--context", "shard-base", "--clusters", "a,b,c", "--listers", "3",
		"--lister-shapes", "kcp:0,v1beta1:", "--duration", "7s", "--json", "--resources", "configmaps", "--scope", "cluster", "--mixed-watchers", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o := cli.run
	if o.Config.Host != "https://127.0.0.1:6443" || o.Config.BearerToken != "secret" || !cli.json || o.Duration != 7*time.Second ||
		len(o.Clusters) != 3 || len(o.ListerShapes) != 2 || o.Listers != 3 || len(o.Resources) != 1 || o.Scope != hammer.ScopeCluster || o.MixedWatchers != 2 {
		t.Errorf("parsed %+v (host %s)", o, o.Config.Host)
	}
	if cli, err := parseArgs([]string{"--server", "https://h:1/clusters/root", "--insecure-skip-tls-verify", "--sequential-probe"}, io.Discard); err != nil || !cli.run.SequentialProbe || !cli.run.Config.Insecure {
		t.Errorf("--server: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--server", "https://h", "--resources", "secrets"}, "--resources"},
		{[]string{"--server", "https://h", "--lister-shapes", "v9:0"}, `--lister-shapes: request shape "v9:0": accept "v9"`},
		{[]string{"--server", "https://h", "--lister-shapes", "watch:v1:0"}, "--lister-shapes: request shape watch:v1:0 is not a lister's"},
		{[]string{"--server", "https://h", "--lister-shapes", "get:v1:0"}, "--lister-shapes: request shape get:v1:0: no wildcard GET"},
		{[]string{"--server", "https://h", "--objects", "-1"}, "--objects"},
		{[]string{"--server", "https://h", "--scope", "galaxy"}, "--scope"},
		{[]string{"--server", "https://h", "--mixed-watchers", "-1"}, "--mixed-watchers"},
		{[]string{"--server", "https://h", "--duration", "0s"}, "--duration"},
		{[]string{"--kubeconfig", filepath.Join(dir, "missing")}, "--kubeconfig"},
		{[]string{"--kubeconfig", kc, "--context", "nope"}, "nope"},
		{[]string{"--server", "https://h", "stray"}, "unexpected arguments"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"--server", "https://h", "--no-verify"}, "no-verify"}, // now --no-after-checks
	} {
		_, err := parseArgs(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseArgs(%q) = %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
	var help strings.Builder
	if _, err := parseArgs([]string{"--help"}, &help); !errors.Is(err, pflag.ErrHelp) {
		t.Errorf("--help = %v", err)
	}
	// --help lists every check the hammer runs, and the flag that skips the
	// after-load ones (--no-verify is carry export's: skip carry verify).
	for _, c := range checks.List() {
		if !strings.Contains(help.String(), "("+c.ID+") ") {
			t.Errorf("--help does not describe check (%s):\n%s", c.ID, help.String())
		}
	}
	if !strings.Contains(help.String(), "--no-after-checks") || strings.Contains(help.String(), "--no-verify") {
		t.Errorf("--help: want --no-after-checks and no --no-verify:\n%s", help.String())
	}
	if cli, err := parseArgs([]string{"--server", "https://h", "--no-after-checks"}, io.Discard); err != nil || !cli.run.NoAfterChecks {
		t.Errorf("--no-after-checks: %v", err)
	}
}
