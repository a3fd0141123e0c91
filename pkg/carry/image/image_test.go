package image

import (
	"archive/tar"
	"context"
	"debug/buildinfo"
	"errors"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/internal/testimage"
	"github.com/kcp-carry/kcp-carry/internal/testkcp"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcpbuild"
)

var servers = testimage.Servers

func syntheticBase(t *testing.T, arch string, withKCP, docker bool) v1.Image {
	return testimage.Base(t, arch, withKCP, docker)
}

func syntheticIndex(t *testing.T, withKCP bool, archs ...string) v1.ImageIndex {
	return testimage.Index(t, withKCP, archs...)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestImage is the hermetic end-to-end test: an in-process registry serves a
// synthetic two-platform kcp-like base; carry image cross-compiles the
// synthetic checkout's four servers for both platforms through carry build,
// pushes, and the pulled result is checked per platform. Then every bad input
// is refused with nothing pushed and nothing written.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles k8s.io/apiserver for two platforms")
	}
	root := testfs.RepoRoot(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()
	push := func(ref string, idx v1.ImageIndex) {
		t.Helper()
		r, err := name.ParseReference(host + "/" + ref)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.WriteIndex(r, idx, remote.WithContext(ctx)); err != nil {
			t.Fatal(err)
		}
	}
	baseIndex := syntheticIndex(t, true, "amd64", "arm64")
	push("kcp-dev/kcp:"+testkcp.Version, baseIndex)
	push("kcp-dev/kcp:no-binaries", syntheticIndex(t, false, "amd64", "arm64"))

	serverSources, err := txtar.ParseFile(filepath.Join("testdata", "kcp-servers.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	extra := map[string]string{}
	for _, f := range serverSources.Files {
		extra[f.Name] = string(f.Data)
	}
	checkout := testkcp.Checkout(t, root, extra)
	binDir := t.TempDir()
	baseRef := host + "/kcp-dev/kcp:" + testkcp.Version
	target := host + "/carry/kcp:" + testkcp.Version + "-carry"

	res, err := Run(ctx, Options{Root: root, KCPSource: checkout, Base: baseRef, Push: target, BinDir: binDir, Progress: testWriter{t}})
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	overlayDir := filepath.Join(root, ".overlay", "k8s.io", "apiserver")
	checkPushed(t, ctx, target, res, baseIndex, baseRef, overlayDir)

	// Later runs layer the binaries built above (copied, or swapped for bad
	// ones), so they cost no compilation.
	reuse := func(swap func(p v1.Platform, dir string)) func(context.Context, kcpbuild.Options) (*kcpbuild.Result, error) {
		return func(_ context.Context, o kcpbuild.Options) (*kcpbuild.Result, error) {
			src := filepath.Join(binDir, o.GOOS+"_"+o.GOARCH)
			if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
				return nil, err
			}
			var bins []string
			for _, s := range servers {
				data, err := os.ReadFile(filepath.Join(src, s))
				if err != nil {
					return nil, err
				}
				dst := filepath.Join(o.OutDir, s)
				if err := os.WriteFile(dst, data, 0o755); err != nil {
					return nil, err
				}
				bins = append(bins, dst)
			}
			if swap != nil {
				swap(v1.Platform{OS: o.GOOS, Architecture: o.GOARCH}, o.OutDir)
			}
			return &kcpbuild.Result{Mode: "source", KCPVersion: testkcp.Version, GitVersion: res.Version, Binaries: bins, Overlay: map[string]string{"k8s.io/apiserver": overlayDir}}, nil
		}
	}

	t.Run("a single Docker image gives a single Docker image", func(t *testing.T) {
		base := syntheticBase(t, "arm64", true, true)
		r, err := name.ParseReference(host + "/kcp-dev/kcp:arm64-docker")
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(r, base, remote.WithContext(ctx)); err != nil {
			t.Fatal(err)
		}
		single, err := Run(ctx, Options{Root: root, KCPSource: checkout, Base: r.String(), Push: host + "/carry/kcp:arm64-docker", BinDir: t.TempDir(), Build: reuse(nil)})
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(testimage.Ref(t, host+"/carry/kcp:arm64-docker"), remote.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		baseDigest, _ := base.Digest()
		if single.MediaType != string(types.DockerManifestSchema2) || m.MediaType != types.DockerManifestSchema2 || len(single.Platforms) != 1 || single.Platforms[0].Platform != "linux/arm64" {
			t.Errorf("result %s (manifest %s) for %v, want one Docker schema 2 image for linux/arm64", single.MediaType, m.MediaType, single.Platforms)
		}
		if got := m.Layers[len(m.Layers)-1].MediaType; got != types.DockerLayer {
			t.Errorf("added layer is %s, want %s like the base's", got, types.DockerLayer)
		}
		if m.Annotations[BaseDigestKey] != baseDigest.String() || m.Annotations[VersionKey] != res.Version {
			t.Errorf("annotations %v, want base digest %s and version %s", m.Annotations, baseDigest, res.Version)
		}
	})

	t.Run("same binaries, same digest, as an OCI layout", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "image")
		again, err := Run(ctx, Options{Root: root, KCPSource: checkout, Base: baseRef, OutDir: out, BinDir: t.TempDir(), Build: reuse(nil)})
		if err != nil {
			t.Fatal(err)
		}
		// Only where it went differs (the revision too, if HEAD moved during the test).
		if diff := cmp.Diff(res, again, cmpopts.IgnoreFields(Result{}, "Pushed", "Out", "RefName"), cmpopts.IgnoreFields(layerFile{}, "Path")); diff != "" {
			t.Errorf("the same binaries gave another image (-push +layout):\n%s", diff)
		}
		ii, err := layout.ImageIndexFromPath(out)
		if err != nil {
			t.Fatal(err)
		}
		im, err := ii.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(im.Manifests) != 1 || im.Manifests[0].Digest.String() != again.Digest || im.Manifests[0].Annotations[refNameKey] != testkcp.Version+"-carry-"+res.CarryID {
			t.Errorf("index.json lists %+v, want the result %s named %s-carry-%s", im.Manifests, again.Digest, testkcp.Version, res.CarryID)
		}

		// Writing again replaces the layout whole, leaving nothing beside it.
		if _, err := Run(ctx, Options{Root: root, KCPSource: checkout, Base: baseRef, Platforms: []v1.Platform{{OS: "linux", Architecture: "amd64"}}, OutDir: out, BinDir: t.TempDir(), Build: reuse(nil)}); err != nil {
			t.Fatal(err)
		}
		if ii, err = layout.ImageIndexFromPath(out); err != nil {
			t.Fatal(err)
		}
		if im, err = ii.IndexManifest(); err != nil {
			t.Fatal(err)
		}
		if len(im.Manifests) != 1 || im.Manifests[0].Digest.String() == again.Digest {
			t.Errorf("after a second write, index.json lists %+v, want only the new amd64-only result", im.Manifests)
		}
		if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 1 {
			t.Errorf("beside --out after a replacement: %v, want only %s", entries, filepath.Base(out))
		}
		if _, err := os.Stat(filepath.Join(out, "blobs", "sha256", strings.TrimPrefix(again.Digest, "sha256:"))); err == nil {
			t.Errorf("the replaced layout's index blob %s is still in %s", again.Digest, out)
		}
		// Restore the two-platform layout for the oci: base below.
		if _, err := Run(ctx, Options{Root: root, KCPSource: checkout, Base: baseRef, OutDir: out, BinDir: t.TempDir(), Build: reuse(nil)}); err != nil {
			t.Fatal(err)
		}

		// The layout is itself a base (oci:DIR): one platform of it, layered
		// again, still has the carry's layer on top of the original base layers.
		fromLayout, err := Run(ctx, Options{Root: root, KCPSource: checkout, Base: ociPrefix + out, Platforms: []v1.Platform{{OS: "linux", Architecture: "arm64"}}, OutDir: filepath.Join(t.TempDir(), "again"), BinDir: t.TempDir(), Build: reuse(nil)})
		if err != nil {
			t.Fatal(err)
		}
		if fromLayout.BaseName != ociPrefix+out || fromLayout.BaseDigest != again.Digest || len(fromLayout.Platforms) != 1 || fromLayout.Platforms[0].BaseDigest != again.Platforms[1].Digest {
			t.Errorf("from the layout: base %s@%s platforms %+v, want oci:%s@%s and linux/arm64 based on %s", fromLayout.BaseName, fromLayout.BaseDigest, fromLayout.Platforms, out, again.Digest, again.Platforms[1].Digest)
		}
	})

	pristineKCP := filepath.Join(t.TempDir(), "kcp")
	testkcp.GoCommand(t, checkout, []string{"GOWORK=off", "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"}, "build", "-o", pristineKCP, "./cmd/kcp")
	copyFile := func(src, dst string) {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	for _, tt := range []struct {
		name      string
		base      string
		platforms []v1.Platform
		build     func(context.Context, kcpbuild.Options) (*kcpbuild.Result, error)
		want      string
	}{
		{name: "missing base", base: host + "/kcp-dev/kcp:v0.0.404", want: "--base " + host + "/kcp-dev/kcp:v0.0.404: "},
		{name: "missing base layout", base: "oci:" + filepath.Join(t.TempDir(), "nope"), want: "not an OCI image layout"},
		{name: "missing platform", base: baseRef, platforms: []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "s390x"}},
			want: "--base " + baseRef + " has no platform linux/s390x (it has linux/amd64, linux/arm64)"},
		{name: "base without /kcp", base: host + "/kcp-dev/kcp:no-binaries",
			want: "--base " + host + "/kcp-dev/kcp:no-binaries (linux/amd64) does not look like kcp's image: no /kcp in its filesystem"},
		{name: "binary linked to the pristine fork", base: baseRef,
			build: reuse(func(p v1.Platform, dir string) {
				if p.Architecture == "amd64" {
					copyFile(pristineKCP, filepath.Join(dir, "kcp"))
				}
			}),
			want: "not from the overlay " + overlayDir,
		},
		{name: "binary for another platform", base: baseRef,
			build: reuse(func(p v1.Platform, dir string) {
				if p.Architecture == "arm64" {
					copyFile(filepath.Join(binDir, "linux_amd64", "virtual-workspaces"), filepath.Join(dir, "virtual-workspaces"))
				}
			}),
			want: "virtual-workspaces was built with GOARCH=amd64, want arm64",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			repo := host + "/refused/" + strings.ReplaceAll(tt.name, " ", "-")
			outParent := t.TempDir()
			out := filepath.Join(outParent, "image")
			build := tt.build
			if build == nil {
				build = func(context.Context, kcpbuild.Options) (*kcpbuild.Result, error) {
					return nil, errors.New("the build ran for a base that should have been refused")
				}
			}
			_, err := Run(ctx, Options{Root: root, KCPSource: checkout, Base: tt.base, Platforms: tt.platforms, Push: repo + ":v1", OutDir: out, BinDir: t.TempDir(), Build: build})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run() = %v, want an error containing %q", err, tt.want)
			}
			if tt.name == "binary linked to the pristine fork" && (!strings.Contains(err.Error(), "linux/amd64: ") || !strings.Contains(err.Error(), "/kcp links k8s.io/apiserver from github.com/kcp-dev/kubernetes/staging/src/k8s.io/apiserver@") || !strings.Contains(err.Error(), "not from the overlay "+overlayDir)) {
				t.Errorf("error does not name the platform, the binary and the overlay: %v", err)
			}
			t.Logf("refused: %v", err)
			r, perr := name.NewRepository(repo)
			if perr != nil {
				t.Fatal(perr)
			}
			if tags, err := remote.List(r, remote.WithContext(ctx)); err == nil && len(tags) > 0 {
				t.Errorf("tags pushed to %s after a refusal: %v", repo, tags)
			}
			if entries, _ := os.ReadDir(outParent); len(entries) != 0 {
				t.Errorf("files left beside --out after a refusal: %v", entries)
			}
		})
	}
}

// checkPushed pulls the result and checks it platform by platform against the base.
func checkPushed(t *testing.T, ctx context.Context, target string, res *Result, baseIndex v1.ImageIndex, baseRef, overlayDir string) {
	t.Helper()
	ref, err := name.ParseReference(target)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(ref, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest.String() != res.Digest || desc.MediaType != types.OCIImageIndex {
		t.Errorf("pushed %s %s, Run reported %s", desc.MediaType, desc.Digest, res.Digest)
	}
	if res.Pushed != ref.Context().Digest(res.Digest).String() {
		t.Errorf("Pushed = %s", res.Pushed)
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	baseDigest, err := baseIndex.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Version, "v1.36.0+kcp-"+testkcp.Version+"-carry-"+res.CarryID) || res.CarryID == "" {
		t.Errorf("version %q carry id %q, want v1.36.0+kcp-%s-carry-<id>", res.Version, res.CarryID, testkcp.Version)
	}
	wantAnn := map[string]string{
		VersionKey:    res.Version,
		SourceKey:     "https://github.com/kcp-carry/kcp-carry",
		BaseNameKey:   baseRef,
		BaseDigestKey: baseDigest.String(),
		SeriesKey:     res.CarryID,
	}
	if res.Revision != "" {
		wantAnn[RevisionKey] = res.Revision
	}
	if diff := cmp.Diff(wantAnn, im.Annotations); diff != "" {
		t.Errorf("index annotations (-want +got):\n%s", diff)
	}
	var plats []string
	for _, d := range im.Manifests {
		plats = append(plats, d.Platform.String())
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, plats); diff != "" {
		t.Errorf("platforms (-want +got; the attestation must be gone):\n%s", diff)
	}

	for _, d := range im.Manifests {
		t.Run(d.Platform.String(), func(t *testing.T) {
			arch := d.Platform.Architecture
			baseImg, err := baseIndex.Image(mustFind(t, baseIndex, arch))
			if err != nil {
				t.Fatal(err)
			}
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			baseDesc, err := baseImg.Digest()
			if err != nil {
				t.Fatal(err)
			}
			m, err := img.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			want := maps.Clone(wantAnn)
			want[BaseDigestKey] = baseDesc.String()
			if diff := cmp.Diff(want, m.Annotations); diff != "" {
				t.Errorf("manifest annotations (-want +got):\n%s", diff)
			}

			// The config is the base's except for the labels.
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			baseCfg, err := baseImg.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			wantLabels := maps.Clone(baseCfg.Config.Labels)
			maps.Copy(wantLabels, want)
			if diff := cmp.Diff(wantLabels, cfg.Config.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			gotCfg, wantCfg := cfg.Config, baseCfg.Config
			gotCfg.Labels, wantCfg.Labels = nil, nil
			if diff := cmp.Diff(wantCfg, gotCfg); diff != "" {
				t.Errorf("container config changed (-base +result):\n%s", diff)
			}
			if cfg.OS != "linux" || cfg.Architecture != arch {
				t.Errorf("config platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, arch)
			}

			// The base layers are byte-identical, and one layer is added.
			baseLayers, err := baseImg.Layers()
			if err != nil {
				t.Fatal(err)
			}
			layers, err := img.Layers()
			if err != nil {
				t.Fatal(err)
			}
			if len(layers) != len(baseLayers)+1 {
				t.Fatalf("%d layers, want %d + 1", len(layers), len(baseLayers))
			}
			for i, bl := range baseLayers {
				bd, _ := bl.Digest()
				ld, _ := layers[i].Digest()
				if bd != ld {
					t.Errorf("layer %d: %s, base has %s", i, ld, bd)
				}
			}
			if len(cfg.RootFS.DiffIDs) != len(baseCfg.RootFS.DiffIDs)+1 || len(cfg.History) != len(baseCfg.History)+1 {
				t.Errorf("rootfs %d diff ids, history %d entries; want the base's %d and %d plus one", len(cfg.RootFS.DiffIDs), len(cfg.History), len(baseCfg.RootFS.DiffIDs), len(baseCfg.History))
			}

			// The new layer holds the four servers, built for this platform
			// with the overlay linked.
			dir := t.TempDir()
			names := extractLayer(t, layers[len(layers)-1], dir)
			if diff := cmp.Diff(servers, names); diff != "" {
				t.Errorf("added layer (-want +got):\n%s", diff)
			}
			for _, n := range names {
				bin := filepath.Join(dir, n)
				if err := kcpbuild.CheckOverlayLinked(bin, map[string]string{"k8s.io/apiserver": overlayDir}); err != nil {
					t.Error(err)
				}
				info, err := buildinfo.ReadFile(bin)
				if err != nil {
					t.Fatal(err)
				}
				if s := setting(info, "GOARCH"); s != arch {
					t.Errorf("/%s: GOARCH=%s, want %s", n, s, arch)
				}
				dep := slices.IndexFunc(info.Deps, func(m *debug.Module) bool { return m.Path == "k8s.io/apiserver" })
				if dep < 0 || info.Deps[dep].Replace == nil || info.Deps[dep].Replace.Path != overlayDir {
					t.Errorf("/%s does not show k8s.io/apiserver => %s", n, overlayDir)
				}
			}
			if arch == "amd64" {
				out, err := exec.Command(filepath.Join(dir, "kcp")).Output()
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(out), "gitVersion="+res.Version) || !strings.Contains(string(out), "wildcard=true") {
					t.Errorf("the image's /kcp printed:\n%s", out)
				}
			}
		})
	}
}

func mustFind(t *testing.T, idx v1.ImageIndex, arch string) v1.Hash {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == arch {
			return d.Digest
		}
	}
	t.Fatalf("base has no linux/%s", arch)
	return v1.Hash{}
}

// extractLayer writes a layer's files into dir, checking each is a file of
// mode 0755 owned by root, and returns their names, sorted.
func extractLayer(t *testing.T, l v1.Layer, dir string) []string {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var names []string
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag != tar.TypeReg || hdr.Mode != 0o755 || hdr.Uid != 0 || hdr.Gid != 0 || strings.Contains(hdr.Name, "/") {
			t.Errorf("entry %s: type %c mode %o owner %d:%d, want a file at / of mode 0755 owned by root", hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Uid, hdr.Gid)
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, hdr.Name), os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		f.Close()
		names = append(names, hdr.Name)
	}
	slices.Sort(names)
	return names
}

func setting(info *buildinfo.BuildInfo, key string) string {
	for _, s := range info.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}
