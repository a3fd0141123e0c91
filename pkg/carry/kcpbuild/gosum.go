package kcpbuild

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"path/filepath"

	"golang.org/x/mod/module"

	"github.com/kcp-carry/kcp-carry/pkg/carry/modcache"
)

// MissingSumError says that a module of kcp's command closure is in neither
// kcp's go.sum nor the repository's, so its hash would have to come from the
// checksum database, which does not know it (kcp's fork modules are not there).
type MissingSumError struct {
	Module     module.Version
	KCPVersion string
	Reason     string
}

func (e *MissingSumError) Error() string {
	return fmt.Sprintf("module %s@%s is needed to build kcp %s but kcp %s's go.sum has no line for it, and it cannot be verified otherwise: %s\n"+
		"Add its go.sum lines to the repository's go.sum (from a trusted source), or build from a kcp checkout (--kcp-source)",
		e.Module.Path, e.Module.Version, e.KCPVersion, e.KCPVersion, e.Reason)
}

// fetchKCPModule downloads the kcp release m and checks its zip against the
// repository's go.sum, then returns the download and the go.sum kcp ships in
// that zip. kcp's go.sum pins every module of its own build, including fork
// modules the checksum database lacks; since the zip is verified, those hashes
// are as trustworthy as the repository's own line for kcp.
func fetchKCPModule(ctx context.Context, root string, m module.Version) (*modcache.Download, []byte, error) {
	rootSum, err := modcache.ReadGoSum(filepath.Join(root, "go.sum"))
	if err != nil {
		return nil, nil, err
	}
	want, err := rootSum.ZipHash(m)
	if err != nil {
		return nil, nil, err
	}
	dl, err := modcache.FetchVerified(ctx, root, m, want)
	if err != nil {
		return nil, nil, err
	}
	sum, err := readZipFile(dl.Zip, m, "go.sum")
	if err != nil {
		return nil, nil, err
	}
	name := fmt.Sprintf("%s@%s/go.sum", m.Path, m.Version)
	if _, err := modcache.ParseGoSum(name, sum); err != nil {
		return nil, nil, err
	}
	return dl, sum, nil
}

// readZipFile returns the module-relative file rel from a module zip.
func readZipFile(zipFile string, m module.Version, rel string) ([]byte, error) {
	r, err := zip.OpenReader(zipFile)
	if err != nil {
		return nil, fmt.Errorf("%s@%s: opening %s: %w", m.Path, m.Version, zipFile, err)
	}
	defer r.Close()
	name := m.Path + "@" + m.Version + "/" + rel
	for _, f := range r.File {
		if f.Name != name {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%s@%s: reading %s from %s: %w", m.Path, m.Version, rel, zipFile, err)
		}
		defer rc.Close()
		data, err := io.ReadAll(rc)
		if err != nil {
			return nil, fmt.Errorf("%s@%s: reading %s from %s: %w", m.Path, m.Version, rel, zipFile, err)
		}
		return data, nil
	}
	return nil, fmt.Errorf("%s@%s: the module zip %s has no %s", m.Path, m.Version, zipFile, rel)
}
