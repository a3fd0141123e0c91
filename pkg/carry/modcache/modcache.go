// Package modcache fetches modules through the go command and checks the
// downloaded zips against go.sum before anything is extracted from them.
//
// The go command only verifies a zip when it first enters the module cache;
// later `go mod download` calls trust the cache. carry builds patched trees
// from those zips, so it re-hashes every zip it uses.
package modcache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

// Origin is where the go command says a module version came from.
type Origin struct {
	VCS  string `json:"VCS,omitempty"`
	URL  string `json:"URL,omitempty"`
	Hash string `json:"Hash,omitempty"`
	Ref  string `json:"Ref,omitempty"`
}

// Download is the JSON object printed by `go mod download -json`.
type Download struct {
	Path     string  `json:"Path"`
	Version  string  `json:"Version"`
	Error    string  `json:"Error,omitempty"`
	Info     string  `json:"Info,omitempty"`
	GoMod    string  `json:"GoMod,omitempty"`
	Zip      string  `json:"Zip,omitempty"`
	Dir      string  `json:"Dir,omitempty"`
	Sum      string  `json:"Sum,omitempty"`
	GoModSum string  `json:"GoModSum,omitempty"`
	Origin   *Origin `json:"Origin,omitempty"`
}

// Info is the content of a module cache .info file.
type Info struct {
	Version string    `json:"Version"`
	Time    time.Time `json:"Time"`
	Origin  *Origin   `json:"Origin,omitempty"`
}

// Fetch runs `go mod download -json m.Path@m.Version` in dir. GOWORK=off
// because the repository's go.work points into the overlay that carry is
// about to (re)build, and a go.work with missing directories breaks every go
// command.
func Fetch(ctx context.Context, dir string, m module.Version) (*Download, error) {
	target := m.Path + "@" + m.Version
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", target)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	runErr := cmd.Run()

	var d Download
	if err := json.Unmarshal(stdout.Bytes(), &d); err != nil {
		if runErr != nil {
			return nil, fmt.Errorf("go mod download %s: %v: %s", target, runErr, strings.TrimSpace(stderr.String()))
		}
		return nil, fmt.Errorf("go mod download %s: decoding output: %w", target, err)
	}
	if d.Error != "" {
		return nil, fmt.Errorf("go mod download %s: %s", target, d.Error)
	}
	if runErr != nil {
		return nil, fmt.Errorf("go mod download %s: %v: %s", target, runErr, strings.TrimSpace(stderr.String()))
	}
	if d.Zip == "" || d.GoMod == "" {
		return nil, fmt.Errorf("go mod download %s: output names no zip or go.mod file", target)
	}
	return &d, nil
}

// ReadInfo reads a module cache .info file (the Info field of a Download).
func ReadInfo(path string) (*Info, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading module info: %w", err)
	}
	var info Info
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("parsing module info %s: %w", path, err)
	}
	return &info, nil
}

// HashMismatchError reports a module zip whose content differs from go.sum.
type HashMismatchError struct {
	Module   module.Version
	Zip      string
	Expected string
	Actual   string
}

func (e *HashMismatchError) Error() string {
	return fmt.Sprintf("%s@%s: zip %s hashes to %s but go.sum expects %s (module cache tampered with or corrupted; run `go clean -modcache` or delete the zip)",
		e.Module.Path, e.Module.Version, e.Zip, e.Actual, e.Expected)
}

// VerifyZip hashes zipFile the way go.sum does and compares it with want.
func VerifyZip(m module.Version, zipFile, want string) error {
	got, err := dirhash.HashZip(zipFile, dirhash.Hash1)
	if err != nil {
		return fmt.Errorf("%s@%s: hashing zip: %w", m.Path, m.Version, err)
	}
	if got != want {
		return &HashMismatchError{Module: m, Zip: zipFile, Expected: want, Actual: got}
	}
	return nil
}

// Extract unzips a verified module zip into dir (which must not exist or be
// empty) and makes the tree writable: zip.Unzip creates read-only files, and
// the overlay is meant to be patched and edited.
func Extract(dir string, m module.Version, zipFile string) error {
	if err := zip.Unzip(dir, m, zipFile); err != nil {
		return fmt.Errorf("%s@%s: extracting %s: %w", m.Path, m.Version, zipFile, err)
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			return os.Chmod(path, 0o644)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s@%s: making extracted tree writable: %w", m.Path, m.Version, err)
	}
	return nil
}

// FetchVerified downloads m, checks its zip against want (the go.sum h1:
// hash) and returns the download. Nothing is extracted.
func FetchVerified(ctx context.Context, dir string, m module.Version, want string) (*Download, error) {
	if want == "" {
		return nil, errors.New("modcache: FetchVerified needs the expected hash")
	}
	d, err := Fetch(ctx, dir, m)
	if err != nil {
		return nil, err
	}
	if err := VerifyZip(m, d.Zip, want); err != nil {
		return nil, err
	}
	return d, nil
}
