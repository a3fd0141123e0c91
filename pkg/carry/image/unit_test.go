package image

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kcp-carry/kcp-carry/internal/testimage"
)

// tarLayer is a layer of the given entries: name -> content, a name ending
// in / is a directory.
func tarLayer(t testing.TB, entries ...string) v1.Layer {
	t.Helper()
	return tarLayerOf(t, types.OCIUncompressedLayer, entries...)
}

// tarLayerOf is tarLayer with the layer media type mt.
func tarLayerOf(t testing.TB, mt types.MediaType, entries ...string) v1.Layer {
	return testimage.TarLayer(t, mt, entries...)
}

func imageOf(t testing.TB, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestFileInImageFollowsWhiteouts(t *testing.T) {
	for _, tt := range []struct {
		name   string
		layers []v1.Layer
		want   bool
	}{
		{"top layer", []v1.Layer{tarLayer(t, "etc/", "kcp=bin")}, true},
		{"lower layer, ./ prefix", []v1.Layer{tarLayer(t, "./kcp=bin"), tarLayer(t, "usr/")}, true},
		{"absent", []v1.Layer{tarLayer(t, "kcp-front-proxy=bin", "usr/local/bin/kcp=bin")}, false},
		{"whited out", []v1.Layer{tarLayer(t, "kcp=bin"), tarLayer(t, ".wh.kcp=")}, false},
		{"opaque root", []v1.Layer{tarLayer(t, "kcp=bin"), tarLayer(t, ".wh..wh..opq=", "etc/")}, false},
		{"added again after a whiteout", []v1.Layer{tarLayer(t, "kcp=bin"), tarLayer(t, ".wh.kcp="), tarLayer(t, "kcp=new")}, true},
		{"a directory", []v1.Layer{tarLayer(t, "kcp/")}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fileInImage(imageOf(t, tt.layers...), KCPPath)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("fileInImage(%s) = %t, want %t", KCPPath, got, tt.want)
			}
		})
	}
}

// TestBinaryLayerIsDeterministic: the same files give the same digest
// whatever their mtimes and modes on disk, and every entry is 0755 root's.
func TestBinaryLayerIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	files := []layerFile{{Name: "kcp", Path: filepath.Join(dir, "kcp")}, {Name: "cache-server", Path: filepath.Join(dir, "cache-server")}}
	for _, f := range files {
		if err := os.WriteFile(f.Path, []byte("binary "+f.Name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	digest := func() v1.Hash {
		t.Helper()
		hashed := append([]layerFile(nil), files...)
		for i := range hashed {
			if err := hashed[i].hashFile(); err != nil {
				t.Fatal(err)
			}
		}
		l, err := binaryLayer(hashed, types.OCILayer)
		if err != nil {
			t.Fatal(err)
		}
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		got, err := listLayer(l) // checks mode, owner and mtime of each entry
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Errorf("layer has %v, want kcp and cache-server", got)
		}
		return d
	}
	first := digest()
	if err := os.Chtimes(files[0].Path, layerModTime.AddDate(30, 0, 0), layerModTime.AddDate(30, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(files[1].Path, 0o755); err != nil {
		t.Fatal(err)
	}
	if second := digest(); second != first {
		t.Errorf("same binaries, new mtime and mode: digest %s, was %s", second, first)
	}
	if err := os.WriteFile(files[0].Path, []byte("another kcp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if third := digest(); third == first {
		t.Errorf("a changed binary kept the digest %s", first)
	}
}

// TestBinaryLayerRefusesAChangedFile: a binary that changes between its check
// and the layering fails the layer instead of shipping unchecked bytes.
func TestBinaryLayerRefusesAChangedFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kcp")
	if err := os.WriteFile(p, []byte("checked"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := layerFile{Name: "kcp", Path: p}
	if err := f.hashFile(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("swapped"), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := binaryLayer([]layerFile{f}, types.OCILayer)
	if err == nil {
		_, err = l.Digest()
	}
	if err == nil || !strings.Contains(err.Error(), p+": the file changed after it was checked") {
		t.Errorf("layering a changed file: %v, want the file named", err)
	}
}

func TestPlatformsNarrowAndName(t *testing.T) {
	img := func(arch string) v1.Image {
		i, err := mutate.ConfigFile(imageOf(t, tarLayer(t, "kcp="+arch)), &v1.ConfigFile{OS: "linux", Architecture: arch})
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: img("amd64"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: img("arm64"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}},
		mutate.IndexAddendum{Add: img("att"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"}}},
	)
	b := &base{name: "example.com/kcp:v1", index: idx}
	all, err := b.platforms(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := platformList(all); got != "linux/amd64, linux/arm64/v8" {
		t.Errorf("default platforms = %s, want linux/amd64, linux/arm64/v8 (no attestation)", got)
	}
	one, err := b.platforms([]v1.Platform{{OS: "linux", Architecture: "arm64"}})
	if err != nil || platformList(one) != "linux/arm64/v8" {
		t.Errorf("--platform linux/arm64 = %s, %v; want linux/arm64/v8", platformList(one), err)
	}
	_, err = b.platforms([]v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "s390x"}})
	if err == nil || !strings.Contains(err.Error(), "--base example.com/kcp:v1 has no platform linux/s390x (it has linux/amd64, linux/arm64/v8)") {
		t.Errorf("missing platform: %v", err)
	}
	single := &base{name: "example.com/kcp:amd64", image: img("amd64")}
	if _, err := single.platforms([]v1.Platform{{OS: "linux", Architecture: "arm64"}}); err == nil || !strings.Contains(err.Error(), "has no platform linux/arm64 (it has linux/amd64)") {
		t.Errorf("single-platform base, other platform: %v", err)
	}
}

// TestPlatformlessBaseIsTheRequestedPlatform: a single image whose config
// names no os/architecture is taken as the one platform asked for, as crane
// and ko do, and refused by name without one.
func TestPlatformlessBaseIsTheRequestedPlatform(t *testing.T) {
	bare := &base{name: "oci:bare", image: imageOf(t, tarLayer(t, "kcp=bare"))}
	got, err := bare.platforms([]v1.Platform{{OS: "linux", Architecture: "amd64"}})
	if err != nil || platformList(got) != "linux/amd64" {
		t.Errorf("--platform linux/amd64 = %s, %v; want linux/amd64", platformList(got), err)
	}
	if _, err := bare.platforms(nil); err == nil || !strings.Contains(err.Error(), "--base oci:bare: its config names no os/architecture") {
		t.Errorf("no --platform: %v", err)
	}
}
