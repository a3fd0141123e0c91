package export

import (
	"strings"
	"testing"
)

func TestLocate(t *testing.T) {
	tests := []struct {
		fork, repo, dir string
	}{
		// The fork's staging modules.
		{"github.com/kcp-dev/kubernetes/staging/src/k8s.io/apimachinery", "github.com/kcp-dev/kubernetes", "staging/src/k8s.io/apimachinery"},
		{"github.com/kcp-dev/kubernetes/staging/src/k8s.io/apiserver", "github.com/kcp-dev/kubernetes", "staging/src/k8s.io/apiserver"},
		// k8s.io/kubernetes is replaced by the fork root.
		{"github.com/kcp-dev/kubernetes", "github.com/kcp-dev/kubernetes", ""},
		// A GitHub module in a subdirectory, and a major version at the root.
		{"github.com/kcp-dev/kcp/sdk", "github.com/kcp-dev/kcp", "sdk"},
		{"github.com/kcp-dev/apimachinery/v2", "github.com/kcp-dev/apimachinery", ""},
		// Other hosts: staging layout, else the whole path is the repository.
		{"example.com/fork/staging/src/example.com/lib", "example.com/fork", "staging/src/example.com/lib"},
		{"example.com/fork", "example.com/fork", ""},
	}
	for _, tt := range tests {
		got, err := Locate(tt.fork)
		if err != nil || got.Repo != tt.repo || got.Dir != tt.dir {
			t.Errorf("Locate(%q) = %+v, %v; want repo %q dir %q", tt.fork, got, err, tt.repo, tt.dir)
		}
	}
	if _, err := Locate("not a path"); err == nil || !strings.Contains(err.Error(), `fork module path "not a path"`) {
		t.Errorf("bad path: %v", err)
	}
}

func TestRevision(t *testing.T) {
	for version, want := range map[string]string{
		"v0.0.0-20260602065202-e006560fc76a":            "e006560fc76a",
		"v1.37.0-alpha.0.0.20260602065202-e006560fc76a": "e006560fc76a",
		"v0.32.3": "v0.32.3",
	} {
		if got := Revision(version); got != want {
			t.Errorf("Revision(%q) = %q, want %q", version, got, want)
		}
	}
}
