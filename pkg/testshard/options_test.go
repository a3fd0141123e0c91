package testshard

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
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
