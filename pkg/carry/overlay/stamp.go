package overlay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/util/atomicfile"
)

// stampDir holds the stamps, outside the module trees so they do not change
// the tree hashes.
const stampDir = ".stamps"

// Stamp records the inputs and output of one module's patched tree, so a
// later run can tell "up to date" from "inputs changed" from "edited by hand".
type Stamp struct {
	Module string `json:"module"`
	// Fork and Version name the module zip the tree was extracted from.
	Fork    string `json:"fork"`
	Version string `json:"version"`
	// ZipHash is the verified go.sum h1: hash of that zip.
	ZipHash string `json:"zipHash"`
	// SeriesHash covers the series file and the bytes of every patch.
	SeriesHash string `json:"seriesHash"`
	// Filter names the file filter used, "" when every file was patched.
	Filter string `json:"filter,omitempty"`
	// Patches are the patches that changed the tree, in order.
	Patches []string `json:"patches"`
	// TreeHash is the dirhash of the patched tree right after it was built.
	TreeHash string `json:"treeHash"`
}

// StampPath is the stamp file of mod inside overlayDir.
func StampPath(overlayDir, mod string) string {
	return filepath.Join(overlayDir, stampDir, filepath.FromSlash(mod)+".json")
}

// ReadStamp reads the stamp of mod; the error wraps fs.ErrNotExist if there is none.
func ReadStamp(overlayDir, mod string) (*Stamp, error) {
	path := StampPath(overlayDir, mod)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading overlay stamp: %w", err)
	}
	var s Stamp
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("parsing overlay stamp %s: %w", path, err)
	}
	if s.Module != mod {
		return nil, fmt.Errorf("overlay stamp %s is for module %q", path, s.Module)
	}
	return &s, nil
}

// WriteStamp writes s into overlayDir atomically.
func WriteStamp(overlayDir string, s *Stamp) error {
	path := StampPath(overlayDir, s.Module)
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing overlay stamp: %w", err)
	}
	return atomicfile.Write(path, append(data, '\n'), 0o644)
}

// readStamps returns every stamp in overlayDir (none if it does not exist).
func readStamps(overlayDir string) (map[string]*Stamp, error) {
	root := filepath.Join(overlayDir, stampDir)
	stamps := map[string]*Stamp{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == root {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".json") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		mod := filepath.ToSlash(strings.TrimSuffix(rel, ".json"))
		s, err := ReadStamp(overlayDir, mod)
		if err != nil {
			return err
		}
		stamps[mod] = s
		return nil
	})
	if err != nil {
		return nil, err
	}
	return stamps, nil
}
