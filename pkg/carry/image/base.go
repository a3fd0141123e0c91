package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// DefaultBaseRepository is where kcp publishes its release images; the
// default base is this repository tagged with the kcp version built.
const DefaultBaseRepository = "ghcr.io/kcp-dev/kcp"

// ociPrefix marks a --base that is an OCI image layout directory.
const ociPrefix = "oci:"

// base is the image or index the carry's binaries are layered onto.
type base struct {
	// name is the fully qualified reference, or oci:ABSDIR.
	name   string
	digest v1.Hash
	// index is nil when the base is a single image.
	index     v1.ImageIndex
	mediaType types.MediaType
	image     v1.Image // the single image when index is nil
}

// platformBase is one platform's base image.
type platformBase struct {
	platform v1.Platform
	image    v1.Image
	digest   v1.Hash
}

// loadBase resolves --base: a registry reference or oci:DIR.
func loadBase(ref string, remoteOpts []remote.Option) (*base, error) {
	if dir, ok := strings.CutPrefix(ref, ociPrefix); ok {
		return loadLayoutBase(dir)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("--base %s: %w", ref, err)
	}
	desc, err := remote.Get(r, remoteOpts...)
	if err != nil {
		return nil, fmt.Errorf("--base %s: %w", ref, err)
	}
	b := &base{name: r.Name(), digest: desc.Digest, mediaType: desc.MediaType}
	switch {
	case desc.MediaType.IsIndex():
		b.index, err = desc.ImageIndex()
	case desc.MediaType.IsImage():
		b.image, err = desc.Image()
	default:
		err = fmt.Errorf("media type %s is neither an image nor an index", desc.MediaType)
	}
	if err != nil {
		return nil, fmt.Errorf("--base %s: %w", ref, err)
	}
	return b, nil
}

// loadLayoutBase reads an OCI image layout: index.json's only entry (an image
// or an index), or index.json itself when it lists several images.
func loadLayoutBase(dir string) (*base, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	fail := func(err error) error { return fmt.Errorf("--base %s%s: %w", ociPrefix, dir, err) }
	ii, err := layout.ImageIndexFromPath(abs)
	if err != nil {
		return nil, fail(fmt.Errorf("not an OCI image layout: %w", err))
	}
	im, err := ii.IndexManifest()
	if err != nil {
		return nil, fail(err)
	}
	b := &base{name: ociPrefix + abs}
	switch {
	case len(im.Manifests) == 0:
		return nil, fail(errors.New("index.json lists no image"))
	case len(im.Manifests) == 1 && im.Manifests[0].MediaType.IsIndex():
		d := im.Manifests[0]
		b.digest, b.mediaType = d.Digest, d.MediaType
		b.index, err = ii.ImageIndex(d.Digest)
	case len(im.Manifests) == 1 && im.Manifests[0].MediaType.IsImage():
		d := im.Manifests[0]
		b.digest, b.mediaType = d.Digest, d.MediaType
		b.image, err = ii.Image(d.Digest)
	default:
		b.index = ii
		b.mediaType = types.OCIImageIndex
		b.digest, err = ii.Digest()
	}
	if err != nil {
		return nil, fail(err)
	}
	return b, nil
}

// buildable says whether carry image can cross-compile for p: kcp's images
// are linux, and GOARM-style variants are not passed to the build.
func buildable(p v1.Platform) bool {
	return p.OS == "linux" && p.Architecture != "" && (p.Variant == "" || p.Architecture == "arm64" && p.Variant == "v8")
}

// platforms picks the base image of each requested platform; with none
// requested, every linux platform of the base (attestations and other
// unknown/unknown entries are dropped: they describe the base, not the result).
func (b *base) platforms(requested []v1.Platform) ([]platformBase, error) {
	var available []platformBase
	if b.index == nil {
		cfg, err := b.image.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("--base %s: %w", b.name, err)
		}
		platform := cfg.Platform()
		if platform == nil {
			// A config without os/architecture (crane append without a base
			// makes one) is for whatever platform the caller names, as crane
			// and ko take it; with none named there is nothing to build for.
			if len(requested) != 1 {
				return nil, fmt.Errorf("--base %s: its config names no os/architecture; pass the one platform it is for with --platform", b.name)
			}
			platform = &requested[0]
		}
		available = append(available, platformBase{platform: *platform, image: b.image, digest: b.digest})
	} else {
		im, err := b.index.IndexManifest()
		if err != nil {
			return nil, fmt.Errorf("--base %s: %w", b.name, err)
		}
		for _, d := range im.Manifests {
			if d.Platform == nil || !d.MediaType.IsImage() || d.Platform.OS == "unknown" {
				continue
			}
			img, err := b.index.Image(d.Digest)
			if err != nil {
				return nil, fmt.Errorf("--base %s (%s): %w", b.name, d.Platform, err)
			}
			available = append(available, platformBase{platform: *d.Platform, image: img, digest: d.Digest})
		}
	}
	if len(requested) == 0 {
		var out []platformBase
		for _, pb := range available {
			if pb.platform.OS == "linux" {
				out = append(out, pb)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("--base %s has no linux platform (it has %s)", b.name, platformList(available))
		}
		return out, checkBuildable(out)
	}
	var out []platformBase
	for _, want := range requested {
		i := slices.IndexFunc(available, func(pb platformBase) bool { return pb.platform.Satisfies(want) })
		if i < 0 {
			return nil, fmt.Errorf("--base %s has no platform %s (it has %s)", b.name, want, platformList(available))
		}
		if !slices.ContainsFunc(out, func(pb platformBase) bool { return pb.digest == available[i].digest }) {
			out = append(out, available[i])
		}
	}
	return out, checkBuildable(out)
}

func checkBuildable(pbs []platformBase) error {
	for _, pb := range pbs {
		if !buildable(pb.platform) {
			return fmt.Errorf("platform %s: carry image cross-compiles linux platforms without a variant (besides arm64/v8); narrow it with --platform", pb.platform)
		}
	}
	return nil
}

func platformList(pbs []platformBase) string {
	if len(pbs) == 0 {
		return "none"
	}
	var names []string
	for _, pb := range pbs {
		names = append(names, pb.platform.String())
	}
	return strings.Join(names, ", ")
}

// fileInImage reports whether p (an absolute path) is a file in img's
// filesystem. It reads layers from the top down and stops at the first that
// adds or deletes p, so usually only the top layers are fetched.
func fileInImage(img v1.Image, p string) (bool, error) {
	layers, err := img.Layers()
	if err != nil {
		return false, err
	}
	target := strings.TrimPrefix(path.Clean(p), "/")
	dir, file := path.Split(target)
	whiteout := path.Join(dir, ".wh."+file)
	opaque := path.Join(dir, ".wh..wh..opq")
	for i := len(layers) - 1; i >= 0; i-- {
		found, hidden, err := scanLayer(layers[i], target, whiteout, opaque)
		if err != nil {
			return false, fmt.Errorf("layer %d: %w", i, err)
		}
		if found {
			return true, nil
		}
		if hidden {
			return false, nil
		}
	}
	return false, nil
}

// scanLayer looks for target (found: a file, link or symlink) and for its
// whiteouts (hidden: deleted from lower layers) in one layer.
func scanLayer(l v1.Layer, target, whiteout, opaque string) (found, hidden bool, err error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return false, false, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return found, hidden, nil
		}
		if err != nil {
			return false, false, err
		}
		switch strings.TrimPrefix(path.Clean("/"+hdr.Name), "/") {
		case target:
			switch hdr.Typeflag {
			case tar.TypeReg, tar.TypeLink, tar.TypeSymlink:
				found = true
			default:
				hidden = true // a directory or device where the file should be
			}
		case whiteout, opaque:
			hidden = true
		}
	}
}
