// Package testimage builds synthetic kcp-like container images for tests:
// the layout of kcp's release image (distroless layers, then the release
// binaries at /, kcp's entrypoint, user and environment) with fake content.
package testimage

import (
	"archive/tar"
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Servers are the binaries kcp's release image holds at /.
var Servers = []string{"cache-server", "kcp", "kcp-front-proxy", "virtual-workspaces"}

// KCPLikeConfig is the container config of kcp's release image.
func KCPLikeConfig() v1.Config {
	return v1.Config{
		Entrypoint: []string{"/kcp"},
		Cmd:        []string{"start"},
		User:       "65532:65532",
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/busybox", "KUBECONFIG=/etc/kcp/config/admin.kubeconfig"},
		WorkingDir: "/",
		Labels:     map[string]string{"org.opencontainers.image.source": "https://github.com/kcp-dev/kcp", "maintainer": "kcp"},
	}
}

// Base is one platform of a kcp-like image: two random layers (the
// distroless base), then a layer with the release binaries (fake ones) and
// kcp's other files, unless withKCP is false. docker makes it a Docker
// schema 2 image instead of an OCI one.
func Base(t testing.TB, arch string, withKCP, docker bool) v1.Image {
	t.Helper()
	manifestType, configType, layerType, tarType := types.OCIManifestSchema1, types.OCIConfigJSON, types.OCILayer, types.OCIUncompressedLayer
	if docker {
		manifestType, configType, layerType, tarType = types.DockerManifestSchema2, types.DockerConfigJSON, types.DockerLayer, types.DockerUncompressedLayer
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, manifestType), configType)
	for range 2 {
		l, err := random.Layer(2048, layerType)
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			t.Fatal(err)
		}
	}
	entries := []string{".kcp/", "etc/ssl/certs/ca-certificates.crt=certs", "usr/local/bin/kubectl=kubectl " + arch}
	if withKCP {
		for _, s := range Servers {
			entries = append(entries, s+"=release "+s+" "+arch)
		}
	}
	img, err := mutate.AppendLayers(img, TarLayer(t, tarType, entries...))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Config = "linux", arch, KCPLikeConfig()
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	return img
}

// Index is a multi-platform kcp-like base with a buildx-style
// attestation entry, which the result must drop.
func Index(t testing.TB, withKCP bool, archs ...string) v1.ImageIndex {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range archs {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: Base(t, arch, withKCP, false), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	att, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	return mutate.AppendManifests(idx, mutate.IndexAddendum{Add: att, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"}}})
}

// TarLayer is a layer of type mt holding entries "name=content"; a name
// ending in / is a directory.
func TarLayer(t testing.TB, mt types.MediaType, entries ...string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		name, content, _ := strings.Cut(e, "=")
		hdr := &tar.Header{Name: name, Mode: 0o755, Size: int64(len(content)), Typeflag: tar.TypeReg}
		if strings.HasSuffix(name, "/") {
			hdr.Typeflag, hdr.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return static.NewLayer(buf.Bytes(), mt)
}

// Ref parses an image reference, or fails the test.
func Ref(t testing.TB, ref string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
