package overlay

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
)

// CarriedModules lists the module paths carried in patchesDir: every
// directory holding a series file, named by its path relative to patchesDir.
func CarriedModules(patchesDir string) ([]string, error) {
	var mods []string
	err := filepath.WalkDir(patchesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != series.FileName {
			return nil
		}
		rel, err := filepath.Rel(patchesDir, filepath.Dir(path))
		if err != nil {
			return err
		}
		mod := filepath.ToSlash(rel)
		if err := module.CheckPath(mod); err != nil {
			return fmt.Errorf("%s: directory does not name a module path: %w", path, err)
		}
		mods = append(mods, mod)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("finding carried modules: %w", err)
	}
	sort.Strings(mods)
	// A module tree nested in another's overlay directory would be hashed
	// and refreshed as part of the outer one.
	for i := 1; i < len(mods); i++ {
		for j := 0; j < i; j++ {
			if strings.HasPrefix(mods[i], mods[j]+"/") {
				return nil, fmt.Errorf("%s: carries both %s and the nested module %s; carry cannot overlay nested modules", patchesDir, mods[j], mods[i])
			}
		}
	}
	return mods, nil
}

// TreeHash is the dirhash of a patched module tree, as recorded in stamps.
func TreeHash(dir, mod string) (string, error) {
	h, err := dirhash.HashDir(dir, mod, dirhash.Hash1)
	if err != nil {
		return "", fmt.Errorf("hashing %s: %w", dir, err)
	}
	return h, nil
}

// ModuleDir is where the overlay keeps the patched tree of mod.
func ModuleDir(overlayDir, mod string) string {
	return filepath.Join(overlayDir, filepath.FromSlash(mod))
}
