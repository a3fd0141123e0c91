package series

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/kcp-carry/kcp-carry/pkg/util/copytree"
	"github.com/kcp-carry/kcp-carry/pkg/util/gitexec"
)

// AppliedIn reports whether the tree in dir already carries every patch of
// the series: on a scratch copy of the directories the patches touch,
// `git apply -R` of each patch, last first, succeeds. dir is only read and
// need not be a git repository. An error means the check could not run (no
// such directory, no git), not that the series is missing.
func (s *Series) AppliedIn(ctx context.Context, dir string) (bool, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return false, fmt.Errorf("checking whether %s carries %s: not a directory", dir, s.Dir)
	}
	touched := map[string]bool{} // the directories of the files patched, and theirs
	for _, p := range s.Patches {
		for _, f := range p.Files {
			for _, name := range []string{f.OldName, f.NewName} {
				for d := filepath.Dir(filepath.FromSlash(name)); name != "" && d != "."; d = filepath.Dir(d) {
					touched[d] = true
				}
			}
		}
	}
	scratch, err := os.MkdirTemp("", "carry-applied-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(scratch)
	err = copytree.Copy(dir, scratch, copytree.Options{Writable: true, Symlinks: true, Skip: func(rel string) (bool, error) {
		return !touched[rel], nil
	}})
	if err != nil {
		return false, fmt.Errorf("copying the files %s patches from %s: %w", s.Dir, dir, err)
	}
	// The scratch directory is no repository: git apply must not find one
	// around it, which would make it skip the paths.
	repo := gitexec.Repo{Dir: scratch, Env: []string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(scratch)}}
	if _, err := repo.Run(ctx, "--version"); err != nil {
		return false, err
	}
	for _, p := range slices.Backward(s.Patches) {
		path, err := filepath.Abs(p.Path)
		if err != nil {
			return false, err
		}
		if _, err := repo.Run(ctx, "apply", "-R", path); err != nil {
			return false, nil // it does not apply in reverse: not carried
		}
	}
	return true, nil
}
