package series

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// ApplyError says which patch, file and hunk did not apply and why.
type ApplyError struct {
	Patch string // patch file path
	File  string // module-relative target file
	// Hunk is the fragment header ("@@ -a,b +c,d @@") when a hunk failed.
	Hunk string
	// Line is the line of the target file where the mismatch was found (0 if unknown).
	Line int64
	Err  error
}

func (e *ApplyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "patch %s: %s", e.Patch, e.File)
	if e.Hunk != "" {
		fmt.Fprintf(&b, ": hunk %s", e.Hunk)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, " (at line %d of %s)", e.Line, e.File)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *ApplyError) Unwrap() error { return e.Err }

// Apply applies every patch of the series to the module tree in dir, in
// order. keep selects files by module-relative path (nil keeps all); see
// Patch.Apply. It returns the number of patches that changed something.
func (s *Series) Apply(dir string, keep func(path string) bool) (int, error) {
	applied := 0
	for _, p := range s.Patches {
		n, err := p.Apply(dir, keep)
		if err != nil {
			return applied, err
		}
		if n > 0 {
			applied++
		}
	}
	return applied, nil
}

// Apply applies the patch to the module tree in dir and returns how many
// files it changed. When keep is not nil, only file diffs whose old or new
// path satisfies keep are applied (for example only the _test.go files of
// the carry, to run its tests against a pristine tree). Failures are
// *ApplyError values.
func (p *Patch) Apply(dir string, keep func(path string) bool) (int, error) {
	n := 0
	for _, f := range p.Files {
		if keep != nil && !(f.OldName != "" && keep(f.OldName)) && !(f.NewName != "" && keep(f.NewName)) {
			continue
		}
		if err := applyFile(dir, f); err != nil {
			var ae *ApplyError
			if errors.As(err, &ae) {
				ae.Patch = p.Path
				return n, ae
			}
			return n, &ApplyError{Patch: p.Path, File: fileName(f), Err: err}
		}
		n++
	}
	return n, nil
}

func fileName(f *gitdiff.File) string {
	if f.NewName != "" {
		return f.NewName
	}
	return f.OldName
}

const (
	gitModeType    = 0o170000
	gitModeSymlink = 0o120000
	gitModeGitlink = 0o160000
)

func applyFile(dir string, f *gitdiff.File) error {
	for _, m := range []os.FileMode{f.OldMode, f.NewMode} {
		switch m & gitModeType {
		case gitModeSymlink:
			return errors.New("symbolic links are not supported in module trees")
		case gitModeGitlink:
			return errors.New("submodules are not supported in module trees")
		}
	}

	switch {
	case f.IsNew:
		target := filepath.Join(dir, filepath.FromSlash(f.NewName))
		if _, err := os.Lstat(target); err == nil {
			return errors.New("new file already exists")
		}
		var out bytes.Buffer
		if err := apply(&out, nil, f); err != nil {
			return err
		}
		return writeFile(target, out.Bytes(), permFor(f.NewMode, 0o644))

	case f.IsDelete:
		target := filepath.Join(dir, filepath.FromSlash(f.OldName))
		src, _, err := readFile(target)
		if err != nil {
			return err
		}
		// Applying the deletion checks that the file has the content the
		// patch expects to delete.
		if err := apply(io.Discard, src, f); err != nil {
			return err
		}
		return removeFile(dir, target)

	default:
		oldPath := filepath.Join(dir, filepath.FromSlash(f.OldName))
		newPath := filepath.Join(dir, filepath.FromSlash(f.NewName))
		src, mode, err := readFile(oldPath)
		if err != nil {
			return err
		}
		var out bytes.Buffer
		if err := apply(&out, src, f); err != nil {
			return err
		}
		perm := permFor(f.NewMode, mode.Perm())
		if f.IsCopy || f.IsRename {
			if _, err := os.Lstat(newPath); err == nil {
				return fmt.Errorf("target %s of the copy or rename already exists", f.NewName)
			}
			if err := writeFile(newPath, out.Bytes(), perm); err != nil {
				return err
			}
			if f.IsRename {
				return removeFile(dir, oldPath)
			}
			return nil
		}
		return writeFile(oldPath, out.Bytes(), perm)
	}
}

// apply runs gitdiff.Apply and turns its positional error into an
// *ApplyError carrying the failing hunk's header.
func apply(dst io.Writer, src []byte, f *gitdiff.File) error {
	err := gitdiff.Apply(dst, bytes.NewReader(src), f)
	if err == nil {
		return nil
	}
	ae := &ApplyError{File: fileName(f), Err: err}
	var gerr *gitdiff.ApplyError
	if errors.As(err, &gerr) {
		ae.Line = gerr.Line
		ae.Err = gerr.Unwrap()
		if gerr.Fragment > 0 {
			// gitdiff numbers fragments after sorting them by old position.
			frags := append([]*gitdiff.TextFragment(nil), f.TextFragments...)
			sort.Slice(frags, func(i, j int) bool { return frags[i].OldPosition < frags[j].OldPosition })
			if gerr.Fragment <= len(frags) {
				fr := frags[gerr.Fragment-1]
				ae.Hunk = fmt.Sprintf("@@ -%d,%d +%d,%d @@", fr.OldPosition, fr.OldLines, fr.NewPosition, fr.NewLines)
			}
		}
	}
	return ae
}

func readFile(path string) ([]byte, os.FileMode, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, errors.New("file to patch does not exist")
		}
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	data, err := os.ReadFile(path)
	return data, fi.Mode(), err
}

// permFor maps a git file mode to permissions: git only tracks the
// executable bit.
func permFor(gitMode, fallback os.FileMode) os.FileMode {
	if gitMode == 0 {
		return fallback
	}
	if gitMode&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// writeFile replaces path with data. It removes the old file first because
// module zips extract read-only.
func writeFile(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.WriteFile(path, data, perm); err != nil {
		return err
	}
	return os.Chmod(path, perm) // WriteFile's perm is subject to umask
}

// removeFile deletes path and then its parent directories up to root as
// long as they are empty, like git apply does.
func removeFile(root, path string) error {
	if err := os.Remove(path); err != nil {
		return err
	}
	for dir := filepath.Dir(path); dir != root && strings.HasPrefix(dir, root); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			break
		}
	}
	return nil
}
