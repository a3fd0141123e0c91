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
	if o.run.Binary != "bin/kcp" || o.run.Load != want.Load || o.json {
		t.Errorf("defaults: %+v, want bin/kcp and %+v", o.run, want.Load)
	}
	o, err = parseArgs([]string{"--kcp", "k", "--duration", "90s", "--max-requests", "7", "--listers", "3", "--json"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.run.Binary != "k" || o.run.Duration != 90*time.Second || o.run.MaxRequests != 7 || o.run.Listers != 3 || !o.json {
		t.Errorf("parsed %+v", o.run)
	}
	var help strings.Builder
	if _, err := parseArgs([]string{"--help"}, &help); !errors.Is(err, pflag.ErrHelp) || !strings.Contains(help.String(), "--max-requests") {
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
		{[]string{"--kcp", ""}, "no kcp binary"},
		{[]string{"stray"}, `unexpected arguments ["stray"]`},
	} {
		if _, err := parseArgs(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseArgs(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
