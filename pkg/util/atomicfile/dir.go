package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// TempDirFor creates an empty directory beside dst (same parent, so on the
// same file system; the parent is created if needed) in which to build
// dst's replacement for ReplaceDir. It is named .<base of dst>.tmp-*, and
// is world-readable like any directory (MkdirTemp makes it private).
func TempDirFor(dst string) (string, error) {
	parent := filepath.Dir(dst)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dst)+".tmp-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// ReplaceDir replaces the directory dst (if it exists) by the directory
// src, by rename: the old dst is moved aside to src+".old" first, put
// back if src cannot take its place, and removed only once src is in
// place. Readers see the old or the new tree, never a mix.
func ReplaceDir(src, dst string) error {
	old := ""
	if _, err := os.Lstat(dst); err == nil {
		old = src + ".old"
		if err := os.Rename(dst, old); err != nil {
			return fmt.Errorf("moving the previous %s aside: %w", dst, err)
		}
	}
	if err := os.Rename(src, dst); err != nil {
		if old != "" {
			if rerr := os.Rename(old, dst); rerr != nil {
				return fmt.Errorf("%w (and restoring the previous %s from %s: %v)", err, dst, old, rerr)
			}
		}
		return err
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("removing the previous %s (moved to %s): %w", dst, old, err)
		}
	}
	return nil
}

// OutDirEntries is what an output directory flag (named flag, e.g. --out)
// finds at dir before a command replaces it: no entries when dir does not
// exist, its entries when it is a directory, and an error naming the flag
// when it is anything else or cannot be read. Each command decides which
// contents it may replace.
func OutDirEntries(flag, dir string) ([]os.DirEntry, error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s %s: exists and is not a directory", flag, dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, dir, err)
	}
	return entries, nil
}
