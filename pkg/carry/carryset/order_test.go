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

// TestOrderByGoMod: client-go, which the apiserver requires, comes before
// it, and each module's carried requirements are recorded.
func TestOrderByGoMod(t *testing.T) {
	trees := map[string]string{}
	for mod, requires := range map[string]string{
		"k8s.io/apiserver":    "require (\n\tk8s.io/apimachinery v0.0.0\n\tk8s.io/client-go v0.0.0\n\tk8s.io/klog/v2 v2.0.0\n)\n",
		"k8s.io/client-go":    "require k8s.io/apimachinery v0.0.0\n",
		"k8s.io/apimachinery": "",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+mod+"\n\ngo 1.26.0\n\n"+requires), 0o644); err != nil {
			t.Fatal(err)
		}
		trees[mod] = dir
	}
	self := func(mod string) string { return mod }
	order, requires, err := OrderByGoMod([]string{"k8s.io/apimachinery", "k8s.io/apiserver", "k8s.io/client-go"}, self,
		func(mod string) string { return filepath.Join(trees[mod], "go.mod") })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"k8s.io/apimachinery", "k8s.io/client-go", "k8s.io/apiserver"}; !slices.Equal(order, want) {
		t.Errorf("order = %q, want %q", order, want)
	}
	if got, want := requires["k8s.io/apiserver"], []string{"k8s.io/apimachinery", "k8s.io/client-go"}; !slices.Equal(got, want) {
		t.Errorf("the apiserver requires %q of the carried modules, want %q", got, want)
	}
	if _, _, err := OrderByGoMod([]string{"k8s.io/nowhere"}, self, func(string) string { return filepath.Join(t.TempDir(), "go.mod") }); err == nil || !strings.Contains(err.Error(), "k8s.io/nowhere: reading its go.mod") {
		t.Errorf("a missing go.mod: %v", err)
	}
}
