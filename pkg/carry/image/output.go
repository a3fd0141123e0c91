package image

import (
	"fmt"
	"os"
	"slices"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/kcp-carry/kcp-carry/pkg/util/atomicfile"
)

// checkOutDir refuses an --out directory that exists and is something other
// than an OCI image layout (which carry image replaces) or empty.
func checkOutDir(dir string) error {
	entries, err := atomicfile.OutDirEntries("--out", dir)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == "oci-layout" }) {
		return nil
	}
	if len(entries) > 0 {
		return fmt.Errorf("--out %s: exists and is not an OCI image layout; remove it or choose another directory", dir)
	}
	return nil
}

// writeLayoutTemp writes the result as an OCI image layout into a new
// temporary directory beside dir; commitLayout moves it into place.
func writeLayoutTemp(dir string, r *built, refName string) (string, error) {
	tmp, err := atomicfile.TempDirFor(dir)
	if err != nil {
		return "", fmt.Errorf("--out %s: %w", dir, err)
	}
	p, err := layout.Write(tmp, empty.Index)
	if err == nil {
		opt := layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": refName})
		if r.index != nil {
			err = p.AppendIndex(r.index, opt)
		} else {
			err = p.AppendImage(r.image, opt)
		}
	}
	if err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("--out %s: writing the OCI layout: %w", dir, err)
	}
	return tmp, nil
}

// commitLayout replaces dir with the written layout tmp.
func commitLayout(tmp, dir string) error {
	if err := atomicfile.ReplaceDir(tmp, dir); err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	return nil
}
