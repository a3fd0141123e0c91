package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/harness/soak"
)

func TestParseArgs(t *testing.T) {
	o, err := parseArgs(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := soak.DefaultOptions()
	if len(o.run.Variants) != 1 || o.run.Variants[0].Binary != "bin/kcp" || o.run.Variants[0].Name != "kcp" || o.run.Load != want.Load || o.json {
		t.Errorf("defaults: %+v, want bin/kcp and %+v", o.run, want.Load)
	}
	if o.run.Duration != 30*time.Minute || o.run.Interval != 30*time.Second || len(o.run.ProfileAt) != 2 || o.run.Resources[0].Resource != "clusterroles" || o.run.Watchers != 0 {
		t.Errorf("defaults: %+v, want the seed load for 30 min sampled every 30 s", o.run)
	}
	o, err = parseArgs([]string{"--kcp", "carried=k", "--kcp", "stock=p", "--kcp-arg", "stock=--watch-cache=false",
		"--lister-shapes", "json:0", "--lister-shapes", "stock=v1:0", "--duration", "90s", "--max-requests", "7", "--listers", "3",
		"--interval", "5s", "--profile-at", "1m", "--out", "/tmp/x", "--json"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	vs := o.run.Variants
	if len(vs) != 2 || vs[0].Name != "carried" || vs[0].Binary != "k" || len(vs[0].Args) != 0 || vs[0].ListerShapes[0].Name() != "json:0" ||
		vs[1].Name != "stock" || vs[1].Binary != "p" || strings.Join(vs[1].Args, " ") != "--watch-cache=false" || vs[1].ListerShapes[0].Name() != "v1:0" {
		t.Errorf("variants %+v", vs)
	}
	if o.run.Duration != 90*time.Second || o.run.MaxRequests != 7 || o.run.Listers != 3 || o.run.Interval != 5*time.Second ||
		len(o.run.ProfileAt) != 1 || o.run.ProfileAt[0] != time.Minute || o.run.OutDir != "/tmp/x" || !o.json {
		t.Errorf("parsed %+v", o.run)
	}
	if o, err := parseArgs([]string{"--redraw", "/tmp/x", "--kcp", "a="}, io.Discard); err != nil || o.redraw != "/tmp/x" {
		t.Errorf("--redraw: %v, %+v: the other flags are not checked", err, o)
	}
	var help strings.Builder
	if _, err := parseArgs([]string{"--help"}, &help); !errors.Is(err, pflag.ErrHelp) || !strings.Contains(help.String(), "--kcp-arg") {
		t.Errorf("--help = %v:\n%s", err, help.String())
	}
}

// TestBadFlag: one bad flag is an error that names it, before kcp starts.
func TestBadFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "unknown flag: --nope"},
		{[]string{"--listers", "many"}, `invalid argument "many" for "--listers" flag`},
		{[]string{"-duration", "1s"}, "unknown shorthand flag: 'd' in -duration"}, // pflag: one dash means shorthand letters
		{[]string{"--duration", "0s"}, "duration 0s"},
		{[]string{"--kcp", "a="}, `variant "a" has no kcp binary`},
		{[]string{"--kcp", "a=x", "--kcp", "a=y"}, `a second kcp named "a"`},
		{[]string{"--kcp-arg", "other=--x"}, `--kcp-arg other=--x: no --kcp named "other"`},
		{[]string{"--kcp-arg", "kcp"}, "want NAME=ARG"},
		{[]string{"--lister-shapes", "watch:v1:0"}, "not a lister's"},
		{[]string{"--resources", "secrets"}, "--resources"},
		{[]string{"--interval", "0s"}, "sample interval 0s"},
		{[]string{"--out", ""}, "no output directory"},
		{[]string{"stray"}, `unexpected arguments ["stray"]`},
	} {
		if _, err := parseArgs(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseArgs(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
