// Package gowork reads, edits and writes go.work files through
// golang.org/x/mod/modfile, so that every workspace carry generates or
// edits (the repository's, carry verify's, carry build's source mode) is
// spelled and written one way.
package gowork

import (
	"bytes"
	"errors"
	"fmt"
	"go/version"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/kcp-carry/kcp-carry/pkg/util/atomicfile"
)

// File is a go.work being generated or edited. Work is the parsed file for
// edits the methods do not cover (reading the existing replaces, dropping
// one); Bytes and Write format it.
type File struct {
	Path string
	Work *modfile.WorkFile
	// old is the content read from Path, nil when it did not exist.
	old    []byte
	exists bool
}

// New starts an empty go.work at path with a go directive.
func New(path, goVersion string) (*File, error) {
	w := &modfile.WorkFile{Syntax: new(modfile.FileSyntax)}
	if err := w.AddGoStmt(goVersion); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &File{Path: path, Work: w}, nil
}

// Read parses the go.work at path; a missing file reads as an empty one
// (Exists reports which).
func Read(path string) (*File, error) {
	old, err := os.ReadFile(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading go.work: %w", err)
	}
	w, err := modfile.ParseWork(path, old, nil)
	if err != nil {
		return nil, err
	}
	return &File{Path: path, Work: w, old: old, exists: exists}, nil
}

// Exists says whether Read found the file.
func (f *File) Exists() bool { return f.exists }

// SetGoIfMissing adds the go directive when the file has none; an existing
// one is the user's choice and stays.
func (f *File) SetGoIfMissing(goVersion string) error {
	if f.Work.Go != nil {
		return nil
	}
	return f.Work.AddGoStmt(goVersion)
}

// Uses says whether the file has a use directive for dir (compared after
// cleaning, as spelled in the file).
func (f *File) Uses(dir string) bool {
	for _, u := range f.Work.Use {
		if path.Clean(u.Path) == path.Clean(dir) {
			return true
		}
	}
	return false
}

// AddUse adds `use dir`, dir spelled as given (see Rel for a relative one).
func (f *File) AddUse(dir string) error {
	if err := f.Work.AddUse(dir, ""); err != nil {
		return fmt.Errorf("%s: use %s: %w", f.Path, dir, err)
	}
	return nil
}

// AddReplace replaces every version of mod by the directory dir; a later
// call for the same module wins.
func (f *File) AddReplace(mod, dir string) error {
	if err := f.Work.AddReplace(mod, "", dir, ""); err != nil {
		return fmt.Errorf("%s: replace %s => %s: %w", f.Path, mod, dir, err)
	}
	return nil
}

// Rel spells target relative to the go.work's directory the way go.work
// wants directory paths: "." or starting with "./" or "../"; absolute if
// there is no relative path.
func (f *File) Rel(target string) string {
	rel, err := filepath.Rel(filepath.Dir(f.Path), target)
	if err != nil {
		return filepath.ToSlash(target)
	}
	rel = filepath.ToSlash(rel)
	if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return rel
	}
	return "./" + rel
}

// Bytes is the formatted file.
func (f *File) Bytes() []byte {
	f.Work.Cleanup()
	return modfile.Format(f.Work.Syntax)
}

// Changed says whether writing would change the file on disk.
func (f *File) Changed() bool {
	return !f.exists || !bytes.Equal(f.Bytes(), f.old)
}

// Write writes the file atomically, creating its directory.
func (f *File) Write() error {
	data := f.Bytes()
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
		return err
	}
	if err := atomicfile.Write(f.Path, data, 0o644); err != nil {
		return err
	}
	f.old, f.exists = data, true
	return nil
}

// GoVersion returns the go directive of a go.mod file: the version a
// workspace using that module needs at least.
func GoVersion(goModPath string) (string, error) {
	data, err := os.ReadFile(goModPath)
	if err != nil {
		return "", fmt.Errorf("reading go version: %w", err)
	}
	mf, err := modfile.ParseLax(goModPath, data, nil)
	if err != nil {
		return "", err
	}
	if mf.Go == nil {
		return "", fmt.Errorf("%s: no go directive", goModPath)
	}
	return mf.Go.Version, nil
}

// Newer returns the newer of two go directive versions ("1.26.0", "1.22").
func Newer(a, b string) string {
	if version.Compare("go"+a, "go"+b) < 0 {
		return b
	}
	return a
}
