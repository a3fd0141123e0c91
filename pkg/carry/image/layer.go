package image

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// layerModTime is every entry's mtime: fixed, so the same binaries always
// give the same layer digest.
var layerModTime = time.Unix(0, 0).UTC()

// binaryMode is what kcp's Dockerfile gives the binaries it copies.
const binaryMode = 0o755

// layerFile is one binary of the layer: at /Name in the image, read from Path.
type layerFile struct {
	Name   string `json:"name"` // the path in the image, without the leading slash
	Path   string `json:"-"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// hashFile fills in Size and SHA256 from the file on disk.
func (f *layerFile) hashFile() error {
	r, err := os.Open(f.Path)
	if err != nil {
		return err
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return fmt.Errorf("reading %s: %w", f.Path, err)
	}
	f.Size, f.SHA256 = n, hex.EncodeToString(h.Sum(nil))
	return nil
}

// binaryLayer is a tar layer of files, sorted by name, each a regular file of
// mode 0755 owned by root with a fixed mtime, compressed with the layer media
// type mt. The files must already be hashed: writing checks them again, so a
// binary changed on disk after its checks fails the layer instead of shipping.
func binaryLayer(files []layerFile, mt types.MediaType) (v1.Layer, error) {
	sorted := append([]layerFile(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	opener := func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeTar(pw, sorted)) }()
		return pr, nil
	}
	return tarball.LayerFromOpener(opener, tarball.WithMediaType(mt), tarball.WithCompressedCaching)
}

func writeTar(w io.Writer, files []layerFile) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     f.Name,
			Mode:     binaryMode,
			Size:     f.Size,
			ModTime:  layerModTime,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		r, err := os.Open(f.Path)
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(io.MultiWriter(tw, h), r)
		r.Close()
		if err != nil {
			return fmt.Errorf("layering %s: %w", f.Path, err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
			return fmt.Errorf("layering %s: the file changed after it was checked (sha256 %s, checked %s)", f.Path, got, f.SHA256)
		}
	}
	return tw.Close()
}

// layerForBase picks the layer media type that matches the base manifest's
// (Docker or OCI), so the result stays one kind of manifest.
func layerForBase(manifestType types.MediaType) types.MediaType {
	if manifestType == types.DockerManifestSchema2 {
		return types.DockerLayer
	}
	return types.OCILayer
}
