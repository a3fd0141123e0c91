// Package copytree copies a directory tree: directories, regular files with
// their permission bits and, when asked, symbolic links as links.
package copytree

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Options says what Copy leaves out and how it writes.
type Options struct {
	// Skip is asked about every directory below the source, by its path
	// relative to it; true leaves the directory out, an error stops Copy.
	Skip func(rel string) (bool, error)
	// Symlinks copies symbolic links as links; without it a link is an
	// UnsupportedError like any file that is not regular.
	Symlinks bool
	// Writable adds the owner's write bit to every copied file: trees from
	// the module cache are read-only, and a git work tree must be editable.
	Writable bool
}

// UnsupportedError is a file Copy does not copy.
type UnsupportedError struct {
	Path string
	Type fs.FileMode
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s: not a regular file, directory or symlink", e.Path)
}

// Copy copies the tree src into dst, creating dst and its directories.
// Files already in dst are overwritten, others left alone.
func Copy(src, dst string, opts Options) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			if rel != "." && opts.Skip != nil {
				skip, err := opts.Skip(rel)
				if err != nil {
					return err
				}
				if skip {
					return filepath.SkipDir
				}
			}
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0 && opts.Symlinks:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			perm := info.Mode().Perm()
			if opts.Writable {
				perm |= 0o200
			}
			return copyFile(path, target, perm)
		default:
			return &UnsupportedError{Path: path, Type: d.Type()}
		}
	})
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
