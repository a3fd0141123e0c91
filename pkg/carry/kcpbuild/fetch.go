package kcpbuild

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/build"
	"io"
	"io/fs"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

// UnfetchableError says that a module the kcp build needs cannot be downloaded
// (on our build machines: github.com/kcp-dev/virtual-workspace-framework, which
// kcp keeps under staging/src and the module proxy does not serve).
type UnfetchableError struct {
	// Required is the module path kcp imports.
	Required string
	// Fetched is the module version the go command tried to download (the
	// replacement the pins redirect Required to).
	Fetched module.Version
	// Reason is the go command's explanation.
	Reason     string
	KCPVersion string
}

func (e *UnfetchableError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cannot build kcp %s from the module proxy: module %s", e.KCPVersion, e.Required)
	if e.Fetched.Path != e.Required {
		fmt.Fprintf(&b, " (pinned to %s@%s)", e.Fetched.Path, e.Fetched.Version)
	} else if e.Fetched.Version != "" {
		fmt.Fprintf(&b, "@%s", e.Fetched.Version)
	}
	fmt.Fprintf(&b, " cannot be fetched: %s\n", e.Reason)
	b.WriteString("Supply it one of two ways:\n")
	b.WriteString("  1. build from a kcp git checkout, which carries it under staging/src:\n")
	b.WriteString("       carry build --kcp-source /path/to/kcp\n")
	b.WriteString("  2. point the build at a local copy of the module (or a GOPROXY that serves it):\n")
	fmt.Fprintf(&b, "       carry build --replace %s=/path/to/its/source", e.Required)
	return b.String()
}

// fetchErrorRE matches the go command's report of a module it could not
// download: "<path>@<version>: reading ...", "... unrecognized import path",
// "... 403 Forbidden" and the like all start with the module version.
var fetchErrorRE = regexp.MustCompile(`^(\S+)@(v\S+): (.*)`)

// verifyErrorRE matches the go command's report of a module whose hash is in
// no go.sum and could not be checked against the checksum database.
var verifyErrorRE = regexp.MustCompile(`(?m)^(?:go: )?(\S+)@(v\S+): (verifying (?:module|go\.mod): .*)$`)

type listedPackage struct {
	ImportPath string
	Error      *struct{ Err string }
}

// findUnfetchable lists the import graph of pkgs (go list -e -deps, one run,
// no retries) and returns the first module the go command could not download,
// or nil. replaces maps replacement modules back to the paths kcp requires.
func findUnfetchable(ctx context.Context, run runner, dir string, pkgs []string, replaces map[module.Version]string) (*UnfetchableError, error) {
	args := append([]string{"list", "-e", "-deps", "-json=ImportPath,Error"}, pkgs...)
	var stdout bytes.Buffer
	if err := run.goCmd(ctx, dir, &stdout, args...); err != nil {
		// A module-level failure such as a hash the checksum database does
		// not know stops go list before it prints any package.
		if m := verifyErrorRE.FindStringSubmatch(err.Error()); m != nil {
			return nil, &MissingSumError{Module: module.Version{Path: m[1], Version: m[2]}, Reason: strings.TrimSpace(m[3])}
		}
		return nil, err
	}
	failed := map[module.Version]string{}
	var other []string
	dec := json.NewDecoder(&stdout)
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decoding go list output: %w", err)
		}
		if p.Error == nil {
			continue
		}
		line := firstLine(p.Error.Err)
		m := fetchErrorRE.FindStringSubmatch(line)
		if m == nil || module.Check(m[1], m[2]) != nil {
			other = append(other, fmt.Sprintf("%s: %s", p.ImportPath, line))
			continue
		}
		mv := module.Version{Path: m[1], Version: m[2]}
		reason := strings.TrimSpace(m[3])
		if strings.HasPrefix(reason, "verifying ") {
			// Downloaded, but its hash is in no go.sum we seeded and the
			// checksum database cannot vouch for it.
			return nil, &MissingSumError{Module: mv, Reason: reason}
		}
		failed[mv] = reason
	}
	if len(failed) == 0 {
		if len(other) > 0 {
			sort.Strings(other)
			return nil, fmt.Errorf("loading the kcp packages failed:\n  %s", strings.Join(other, "\n  "))
		}
		return nil, nil
	}
	// Report one module, the same one every run.
	var mods []module.Version
	for m := range failed {
		mods = append(mods, m)
	}
	module.Sort(mods)
	m := mods[0]
	required := m.Path
	if r, ok := replaces[m]; ok {
		required = r
	}
	return &UnfetchableError{Required: required, Fetched: m, Reason: failed[m]}, nil
}

// runner runs the go command with a fixed environment.
type runner struct {
	env    []string
	stderr io.Writer
}

func (r runner) goCmd(ctx context.Context, dir string, stdout io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = r.env
	cmd.Stdout = stdout
	var stderr bytes.Buffer
	if r.stderr != nil {
		cmd.Stderr = io.MultiWriter(&stderr, r.stderr)
	} else {
		cmd.Stderr = &stderr
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), dir, err, lastLines(stderr.String(), 20))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// checkStagingModules is the fast path for the modules kcp keeps in its own
// tree (replaced by ./staging/src/... in kcp's go.mod, so they exist in the
// module proxy only if someone published them). Those that kcp's non-test
// sources import are downloaded first, one go command for all, so a missing
// one fails the build in seconds instead of after the whole graph loads.
// Modules the caller supplies as local directories (--replace) are not
// fetched, so they are not checked.
func checkStagingModules(ctx context.Context, run runner, dir, kcpDir string, kcpMod *modfile.File, pinned map[string]module.Version, local map[string]string) (*UnfetchableError, error) {
	var staged []string
	for _, r := range kcpMod.Replace {
		if _, ok := local[r.Old.Path]; ok {
			continue
		}
		if modfile.IsDirectoryPath(r.New.Path) {
			if _, ok := pinned[r.Old.Path]; ok {
				staged = append(staged, r.Old.Path)
			}
		}
	}
	if len(staged) == 0 {
		return nil, nil
	}
	imported, err := importedModules(kcpDir, staged)
	if err != nil {
		return nil, err
	}
	var targets []string
	for _, mod := range imported {
		v := pinned[mod]
		targets = append(targets, v.Path+"@"+v.Version)
	}
	if len(targets) == 0 {
		return nil, nil
	}
	var stdout bytes.Buffer
	// go mod download exits non-zero when a module fails; the JSON says which.
	_ = run.goCmd(ctx, dir, &stdout, append([]string{"mod", "download", "-json"}, targets...)...)
	dec := json.NewDecoder(&stdout)
	for {
		var d struct{ Path, Version, Error string }
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decoding go mod download output: %w", err)
		}
		if d.Error == "" {
			continue
		}
		fetched := module.Version{Path: d.Path, Version: d.Version}
		for _, mod := range imported {
			if pinned[mod] == fetched {
				return &UnfetchableError{Required: mod, Fetched: fetched, Reason: firstLine(strings.TrimPrefix(d.Error, d.Path+"@"+d.Version+": "))}, nil
			}
		}
	}
	return nil, nil
}

// importedModules returns those of mods that some non-test Go file under dir
// imports (by import path prefix). Which files count is what go build would
// compile for this platform with no extra tags (go/build's file name suffixes
// and build constraints, so hack/tools.go's //go:build tools does not).
func importedModules(dir string, mods []string) ([]string, error) {
	found := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); p != dir && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		pkg, err := build.Default.ImportDir(p, 0)
		if err != nil {
			return nil // no Go files here, or not ours to judge: the go command will report it
		}
		for _, ip := range pkg.Imports {
			for _, mod := range mods {
				if ip == mod || strings.HasPrefix(ip, mod+"/") {
					found[mod] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scanning kcp's imports in %s: %w", dir, err)
	}
	var out []string
	for _, mod := range mods {
		if found[mod] {
			out = append(out, mod)
		}
	}
	return out, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
