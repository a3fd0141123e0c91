package testshard

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/harness/cachemutation"
)

func TestValidateBindAddress(t *testing.T) {
	for _, ok := range []string{"127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"} {
		o := NewOptions()
		o.BindAddress = ok
		if err := o.Validate(); err != nil {
			t.Errorf("--bind-address=%s refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"0.0.0.0", "::", "10.0.0.1", "192.0.2.10", "example.com", ""} {
		o := NewOptions()
		o.BindAddress = bad
		err := o.Validate()
		if err == nil {
			t.Errorf("--bind-address=%q accepted", bad)
			continue
		}
		if !strings.Contains(err.Error(), "--bind-address") {
			t.Errorf("--bind-address=%q: error does not name the flag: %v", bad, err)
		}
	}
}

func TestValidatePort(t *testing.T) {
	o := NewOptions()
	o.SecurePort = 70000
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--secure-port") {
		t.Errorf("--secure-port=70000: %v", err)
	}
}

// Run refuses a non-loopback address before it creates or binds anything.
func TestRunRefusesNonLoopback(t *testing.T) {
	dir := t.TempDir() + "/never"
	o := NewOptions()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--bind-address=0.0.0.0", "--root-dir=" + dir}); err != nil {
		t.Fatal(err)
	}
	err := Run(context.Background(), *o)
	if err == nil || !strings.Contains(err.Error(), "--bind-address") {
		t.Fatalf("Run with --bind-address=0.0.0.0: %v", err)
	}
	if _, statErr := os.Stat(dir); statErr == nil {
		t.Errorf("Run created %s before refusing", dir)
	}
}

// The cache mutation detector is off unless the flag or the environment
// turns it on; a bad environment value is refused, naming the variable.
func TestCacheMutationDetectorOption(t *testing.T) {
	t.Setenv(cachemutation.EnvVar, "")
	o := NewOptions()
	if err := o.Validate(); err != nil || o.cacheMutationDetector() {
		t.Fatalf("default: validate %v, on %v", err, o.cacheMutationDetector())
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--cache-mutation-detector", "--cache-mutation-detector-interval=250ms"}); err != nil {
		t.Fatal(err)
	}
	if !o.cacheMutationDetector() || o.CacheMutationDetectorInterval != 250*time.Millisecond {
		t.Errorf("--cache-mutation-detector: on %v, interval %s", o.cacheMutationDetector(), o.CacheMutationDetectorInterval)
	}

	o = NewOptions()
	t.Setenv(cachemutation.EnvVar, "true")
	if err := o.Validate(); err != nil || !o.cacheMutationDetector() {
		t.Errorf("%s=true: validate %v, on %v", cachemutation.EnvVar, err, o.cacheMutationDetector())
	}
	if err := o.Complete(); err != nil || !o.CacheMutationDetector {
		t.Errorf("%s=true: Complete %v, field %v", cachemutation.EnvVar, err, o.CacheMutationDetector)
	}
	t.Setenv(cachemutation.EnvVar, "maybe")
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), cachemutation.EnvVar) {
		t.Errorf("%s=maybe: %v", cachemutation.EnvVar, err)
	}
	if err := NewOptions().Complete(); err == nil || !strings.Contains(err.Error(), cachemutation.EnvVar) {
		t.Errorf("%s=maybe: Complete %v", cachemutation.EnvVar, err)
	}
	t.Setenv(cachemutation.EnvVar, "")
	o.CacheMutationDetectorInterval = -time.Second
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--cache-mutation-detector-interval") {
		t.Errorf("negative interval: %v", err)
	}
}
