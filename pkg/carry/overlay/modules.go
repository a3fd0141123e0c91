package overlay

import (
	"fmt"
	"path/filepath"

	"golang.org/x/mod/sumdb/dirhash"
)

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
