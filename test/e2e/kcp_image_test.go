package e2e

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/internal/testimage"
	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/image"
	"github.com/kcp-carry/kcp-carry/pkg/carry/kcpbuild"
)

// EnvImagePlatforms lists the platforms TestRealKCPImage builds (default
// linux/amd64, which CI runs; e.g. linux/amd64,linux/arm64 for a
// multi-platform index, a full kcp build per platform).
const EnvImagePlatforms = "KCP_CARRY_IMAGE_PLATFORMS"

// TestRealKCPImage is carry image with real kcp: the patched servers, built
// from KCP_SOURCE for each platform, are layered onto a kcp-like base served
// by an in-process registry on 127.0.0.1 and pushed back to it; the
// linux/amd64 /kcp pulled out of the pushed image must be the carry's kcp (its
// build info shows the overlay) and survive the real-kcp load with every check
// holding.
func TestRealKCPImage(t *testing.T) {
	src := kcpSource(t, "real kcp: set "+EnvKCPSource+"=<kcp v0.32.3 source tree> and run `make test`")
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("runs the image's linux/amd64 /kcp; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	root := testfs.RepoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	platforms := []v1.Platform{{OS: "linux", Architecture: "amd64"}}
	if env := os.Getenv(EnvImagePlatforms); env != "" {
		platforms = nil
		for _, p := range strings.Split(env, ",") {
			pl, err := v1.ParsePlatform(strings.TrimSpace(p))
			if err != nil {
				t.Fatalf("%s: %v", EnvImagePlatforms, err)
			}
			platforms = append(platforms, *pl)
		}
	}
	baseRef := host + "/kcp-dev/kcp:v0.32.3"
	if len(platforms) == 1 {
		err := remote.Write(testimage.Ref(t, baseRef), testimage.Base(t, platforms[0].Architecture, true, false), remote.WithContext(ctx))
		if err != nil {
			t.Fatalf("pushing the synthetic base: %v", err)
		}
	} else {
		var archs []string
		for _, p := range platforms {
			archs = append(archs, p.Architecture)
		}
		if err := remote.WriteIndex(testimage.Ref(t, baseRef), testimage.Index(t, true, archs...), remote.WithContext(ctx)); err != nil {
			t.Fatalf("pushing the synthetic base: %v", err)
		}
	}

	res, err := image.Run(ctx, image.Options{
		Root:      root,
		KCPSource: src,
		Base:      baseRef,
		Platforms: platforms,
		Push:      host + "/kcp-carry/kcp:e2e",
		BinDir:    t.TempDir(),
		Progress:  testLogWriter{t},
	})
	if err != nil {
		t.Fatalf("carry image: %v", err)
	}
	t.Logf("pushed %s (%s)", res.Pushed, res.Version)
	if len(res.Platforms) != len(platforms) {
		t.Fatalf("the result has %d platforms, want %d: %+v", len(res.Platforms), len(platforms), res.Platforms)
	}

	bin := extractFromImage(t, ctx, res.Pushed, "kcp")
	c, err := carryset.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	carried := c.Paths()
	if got, err := kcpbuild.Variant(bin, carried); err != nil || got != "patched" {
		t.Fatalf("the image's /kcp is a %q build (%v), want patched", got, err)
	}

	s, clusters := startKCPWithWorkspaces(t, bin, t.TempDir())
	o := kcpLoadOptions(t, s, clusters)
	rep := runHammer(t, o)
	expectSurvivedClean(t, s, rep)
	t.Logf("the image's kcp: %d requests in %s (%.0f req/s), %s", rep.Requests, rep.LoadElapsed, rep.ReqPerSec, checkedCounts(rep))
}

// extractFromImage pulls ref (its linux/amd64 image when ref is an index) and
// writes the file at /file of its filesystem (the last layer that holds it) to
// a temporary directory.
func extractFromImage(t *testing.T, ctx context.Context, ref, file string) string {
	t.Helper()
	img, err := remote.Image(testimage.Ref(t, ref), remote.WithContext(ctx), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}))
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), file)
	for i := len(layers) - 1; i >= 0; i-- {
		if found := extractFromLayer(t, layers[i], file, out); found {
			return out
		}
	}
	t.Fatalf("%s: no layer holds /%s", ref, file)
	return ""
}

func extractFromLayer(t *testing.T, l v1.Layer, file, out string) bool {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimPrefix(hdr.Name, "/") != file || hdr.Typeflag != tar.TypeReg {
			continue
		}
		f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return true
	}
}

// testLogWriter logs each line written to it.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
