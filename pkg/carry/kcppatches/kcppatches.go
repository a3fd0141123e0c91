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
	"os"
	"path/filepath"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/util/copytree"
	"github.com/kcp-carry/kcp-carry/pkg/util/gitexec"
)

// Dir is the series' directory under the repository root.
const Dir = "kcp-patches"

// Load reads root/kcp-patches/series and its patches (CheckSubject).
func Load(root string) (*series.Series, error) {
	return series.LoadChecked(filepath.Join(root, Dir), CheckSubject)
}

// CheckSubject refuses the fork's UPSTREAM: subjects: kcp's own commits do
// not use that convention (their subjects read "e2e: ..." or a sentence).
func CheckSubject(subject string) error {
	if strings.HasPrefix(subject, "UPSTREAM:") {
		return fmt.Errorf("subject %q: kcp's commits do not use the fork's UPSTREAM: convention", subject)
	}
	return nil
}

// committer commits the copied tree, and is the author and committer of the
// patches applied to it.
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
		// The patches name no author (carry export sets the submitter);
		// git am needs one, so the scratch commits are the committer's.
		data, err := series.SetAuthor(p.Data, committer.Name+" <"+committer.Email+">", "")
		if err != nil {
			return fmt.Errorf("%s: %w", p.Path, err)
		}
		stamped := filepath.Join(dst, ".git", "carry-"+p.Name)
		if err := os.WriteFile(stamped, data, 0o644); err != nil {
			return err
		}
		if _, err := repo.Run(ctx, "am", "-q", "--keep-non-patch", "--no-3way", stamped); err != nil {
			return fmt.Errorf("%s does not apply to kcp tree %s (git am): %w", p.Path, src, err)
		}
	}
	return nil
}

// copyTree copies regular files, directories and symlinks of src into dst,
// keeping file modes; a top-level .git is left out, and so is dst when it is
// inside src.
func copyTree(src, dst string) error {
	absDst, err := filepath.Abs(dst)
	if err != nil {
		return err
	}
	return copytree.Copy(src, dst, copytree.Options{
		Symlinks: true,
		Skip: func(rel string) (bool, error) {
			return rel == ".git" || filepath.Join(src, rel) == absDst, nil
		},
	})
}
