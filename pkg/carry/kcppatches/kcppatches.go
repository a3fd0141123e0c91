// Package kcppatches is the carry's companion change for kcp itself:
// kcp-patches/ holds a series of git format-patch files against kcp's
// repository (today kcp's own e2e regression test for the bug the fork
// carry fixes), in the layout of staging-patches/. ApplyToCopy applies them
// with git am to a scratch copy of a kcp source tree, as a kcp maintainer
// would, leaving the tree itself untouched.
package kcppatches

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kcp-carry/kcp-carry/pkg/carry/gitexec"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
)

// Dir is the series' directory under the repository root.
const Dir = "kcp-patches"

// Load reads root/kcp-patches/series and its patches.
func Load(root string) (*series.Series, error) {
	return series.Load(filepath.Join(root, Dir))
}

// committer commits the copied tree and is git am's committer; the patches
// keep their own authors.
var committer = gitexec.Ident{Name: "carry", Email: "carry@localhost", Date: "@0 +0000"}

// ApplyToCopy replaces dst with a copy of the kcp tree src (without its .git),
// commits it as a scratch repository's first commit and applies s's patches
// with `git am`, one commit each. An error names the patch and the tree.
func ApplyToCopy(ctx context.Context, src, dst string, s *series.Series) error {
	src, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := copyTree(src, dst); err != nil {
		return fmt.Errorf("copying kcp tree %s to %s: %w", src, dst, err)
	}
	repo := gitexec.Repo{Dir: dst, Env: committer.Env()}
	for _, args := range [][]string{
		{"-c", "init.defaultBranch=kcp", "init", "-q"},
		{"add", "-A", "-f", "."},
		{"commit", "-q", "--allow-empty", "-m", "kcp tree from " + src},
	} {
		if _, err := repo.Run(ctx, args...); err != nil {
			return fmt.Errorf("committing the copy of kcp tree %s: %w", src, err)
		}
	}
	for _, p := range s.Patches {
		if _, err := repo.Run(ctx, "am", "-q", "--keep-non-patch", "--no-3way", p.Path); err != nil {
			return fmt.Errorf("%s does not apply to kcp tree %s (git am): %w", p.Path, src, err)
		}
	}
	return nil
}

// copyTree copies regular files and directories of src into dst, keeping
// file modes; a top-level .git is left out, and so is dst when it is inside
// src.
func copyTree(src, dst string) error {
	absDst, err := filepath.Abs(dst)
	if err != nil {
		return err
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() && (rel == ".git" || path == absDst) {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case info.Mode().IsRegular():
			return copyFile(path, target, info.Mode().Perm())
		default:
			return fmt.Errorf("%s: not a regular file, directory or symlink", path)
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
