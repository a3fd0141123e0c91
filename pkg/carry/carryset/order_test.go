package carryset

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDependencyOrder(t *testing.T) {
	tests := []struct {
		name     string
		requires map[string][]string
		want     []string
	}{
		{"fork", map[string][]string{
			"k8s.io/apiserver":    {"k8s.io/api", "k8s.io/apimachinery", "k8s.io/client-go"},
			"k8s.io/apimachinery": {"github.com/google/go-cmp"},
		}, []string{"k8s.io/apimachinery", "k8s.io/apiserver"}},
		{"dependency before path order", map[string][]string{
			"a": {"z"}, "z": nil,
		}, []string{"z", "a"}},
		{"chain", map[string][]string{
			"a": {"b"}, "b": {"c"}, "c": nil, "d": nil,
		}, []string{"c", "b", "a", "d"}},
		{"independent keep path order", map[string][]string{
			"b": nil, "a": nil, "c": {"a"},
		}, []string{"a", "b", "c"}},
		{"self and duplicate requires", map[string][]string{
			"a": {"a", "b", "b"}, "b": nil,
		}, []string{"b", "a"}},
	}
	for _, tt := range tests {
		got, err := DependencyOrder(tt.requires)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: DependencyOrder = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}

	_, err := DependencyOrder(map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"b"}})
	if err == nil || !strings.Contains(err.Error(), "cycle (b, c)") {
		t.Errorf("cycle: %v", err)
	}
}

func TestGoModRequires(t *testing.T) {
	path := filepath.Join(t.TempDir(), "go.mod")
	if err := os.WriteFile(path, []byte("module k8s.io/apiserver\n\ngo 1.25\n\nrequire (\n\tk8s.io/apimachinery v0.0.0\n\tk8s.io/api v0.0.0 // indirect\n)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := GoModRequires(path)
	if err != nil || !slices.Equal(got, []string{"k8s.io/apimachinery", "k8s.io/api"}) {
		t.Errorf("GoModRequires = %q, %v", got, err)
	}
}
