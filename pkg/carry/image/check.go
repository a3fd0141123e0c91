package image

import (
	"archive/tar"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kcp-carry/kcp-carry/pkg/carry/kcpbuild"
)

// checkBinaries runs carry build's build-info check on each binary of one
// platform's build, and checks that it was built for that platform with CGO
// off. It returns the layer files, hashed.
func checkBinaries(binaries []string, overlayDirs map[string]string, p v1.Platform) ([]layerFile, error) {
	var files []layerFile
	for _, bin := range binaries {
		if err := kcpbuild.CheckOverlayLinked(bin, overlayDirs); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		info, err := buildinfo.ReadFile(bin)
		if err != nil {
			return nil, fmt.Errorf("%s: reading build info of %s: %w", p, bin, err)
		}
		want := map[string]string{"GOOS": p.OS, "GOARCH": p.Architecture, "CGO_ENABLED": "0"}
		for _, s := range info.Settings {
			if w, ok := want[s.Key]; ok {
				if s.Value != w {
					return nil, fmt.Errorf("%s: %s was built with %s=%s, want %s", p, bin, s.Key, s.Value, w)
				}
				delete(want, s.Key)
			}
		}
		for _, k := range []string{"GOOS", "GOARCH", "CGO_ENABLED"} {
			if _, missing := want[k]; missing {
				return nil, fmt.Errorf("%s: %s: build info has no %s setting", p, bin, k)
			}
		}
		f := layerFile{Name: filepath.Base(bin), Path: bin}
		if err := f.hashFile(); err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if !slices.ContainsFunc(files, func(f layerFile) bool { return f.Name == "kcp" }) {
		return nil, fmt.Errorf("%s: the build produced no kcp binary (got %d others)", p, len(files))
	}
	return files, nil
}

// checkImage checks an assembled image before anything leaves the machine:
// the base's layers come first and unchanged, and the one added layer holds
// exactly the checked binaries.
func checkImage(img v1.Image, pb platformBase, files []layerFile) error {
	baseManifest, err := pb.image.Manifest()
	if err != nil {
		return err
	}
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	if len(m.Layers) != len(baseManifest.Layers)+1 {
		return fmt.Errorf("%s: %d layers, want the base's %d plus one", pb.platform, len(m.Layers), len(baseManifest.Layers))
	}
	for i, l := range baseManifest.Layers {
		if m.Layers[i].Digest != l.Digest || m.Layers[i].Size != l.Size || m.Layers[i].MediaType != l.MediaType {
			return fmt.Errorf("%s: layer %d is %s, the base's is %s", pb.platform, i, m.Layers[i].Digest, l.Digest)
		}
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	got, err := listLayer(layers[len(layers)-1])
	if err != nil {
		return fmt.Errorf("%s: reading the added layer: %w", pb.platform, err)
	}
	want := map[string]string{}
	for _, f := range files {
		want[f.Name] = f.SHA256
	}
	if len(got) != len(want) {
		return fmt.Errorf("%s: the added layer has %d files, want %d", pb.platform, len(got), len(want))
	}
	for name, sum := range want {
		if got[name] != sum {
			return fmt.Errorf("%s: the added layer's /%s has sha256 %q, want %s", pb.platform, name, got[name], sum)
		}
	}
	return nil
}

// listLayer returns name -> sha256 of a layer's regular files, checking the
// mode and owner every entry must have.
func listLayer(l v1.Layer) (map[string]string, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	out := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if hdr.Typeflag != tar.TypeReg || hdr.Mode != binaryMode || hdr.Uid != 0 || hdr.Gid != 0 || !hdr.ModTime.Equal(layerModTime) {
			return nil, fmt.Errorf("entry %s: type %c mode %o owner %d:%d mtime %s, want a file of mode %o owned by 0:0 at %s",
				hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Uid, hdr.Gid, hdr.ModTime, binaryMode, layerModTime)
		}
		h := sha256.New()
		if _, err := io.Copy(h, tr); err != nil {
			return nil, err
		}
		out[hdr.Name] = hex.EncodeToString(h.Sum(nil))
	}
}
