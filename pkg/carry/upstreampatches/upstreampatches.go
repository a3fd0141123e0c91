// Package upstreampatches is the carry's pull request for Kubernetes itself:
// upstream-patches/kubernetes/ holds a series of git format-patch files
// against kubernetes/kubernetes, with staging/src/<module>/ paths, in the
// layout of staging-patches/, and a file named base that names the upstream
// modules the series is cut on, as the Go module proxy serves them, with
// their go.sum hashes. ApplyToCopy lays those modules out at their staging
// paths in a scratch git repository, the nearest thing to Kubernetes master
// that the proxy serves, and applies the series with git am, as a Kubernetes
// maintainer would. The patches are ours: they depend on upstream only
// through their diff context.
package upstreampatches

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/kcp-carry/kcp-carry/pkg/carry/modcache"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/util/gitexec"
)

// Dir is the upstream pull requests' directory under the repository root,
// and Kubernetes the one for kubernetes/kubernetes in it.
const (
	Dir        = "upstream-patches"
	Kubernetes = "kubernetes"
	// BaseFile names the modules the series is cut on.
	BaseFile = "base"
)

// PR is the pull request for kubernetes/kubernetes.
type PR struct {
	// Dir is upstream-patches/kubernetes, absolute.
	Dir    string
	Series *series.Series
	// Base are the upstream modules the series applies to, in BaseFile's
	// order.
	Base []Module
}

// Module is an upstream module at the version the series is cut on.
type Module struct {
	module.Version
	// ZipHash is the go.sum h1: hash of its zip.
	ZipHash string
}

// StagingDir is where kubernetes/kubernetes keeps the module:
// staging/src/<module path>.
func (m Module) StagingDir() string { return path.Join("staging/src", m.Path) }

func (m Module) String() string { return m.Path + "@" + m.Version.Version }

// Load reads root/upstream-patches/kubernetes: its series, each subject
// checked with CheckSubject, and its base. Without upstream-patches/ it
// returns nil and no error: there is no upstream pull request.
func Load(root string) (*PR, error) {
	if _, err := os.Stat(filepath.Join(root, Dir)); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	dir := filepath.Join(root, Dir, Kubernetes)
	s, err := series.LoadChecked(dir, CheckSubject)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	base, err := readBase(filepath.Join(dir, BaseFile))
	if err != nil {
		return nil, err
	}
	return &PR{Dir: dir, Series: s, Base: base}, nil
}

// readBase reads a base file: one module a line, `<module path> <version>
// <h1: hash>`.
func readBase(file string) ([]Module, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	lines, err := series.Lines(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var mods []Module
	var errs []error
	seen := map[string]bool{}
	for _, l := range lines {
		if len(l.Fields) != 3 || !strings.HasPrefix(l.Fields[2], "h1:") {
			errs = append(errs, fmt.Errorf("%s:%d: want <module path> <version> <h1: hash of its zip>, as in go.sum", file, l.N))
			continue
		}
		m := Module{Version: module.Version{Path: l.Fields[0], Version: l.Fields[1]}, ZipHash: l.Fields[2]}
		if err := module.Check(m.Path, m.Version.Version); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", file, l.N, err))
			continue
		}
		if seen[m.Path] {
			errs = append(errs, fmt.Errorf("%s:%d: %s named twice", file, l.N, m.Path))
			continue
		}
		seen[m.Path] = true
		mods = append(mods, m)
	}
	if len(mods) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s: names no module", file))
	}
	return mods, errors.Join(errs...)
}

// CheckSubject refuses the fork's UPSTREAM: subjects: Kubernetes' own
// commits do not use that convention ("cacher: ...").
func CheckSubject(subject string) error {
	if strings.HasPrefix(subject, "UPSTREAM:") {
		return fmt.Errorf("subject %q: Kubernetes' commits do not use the fork's UPSTREAM: convention", subject)
	}
	return nil
}

// FetchError is a base module the go command could not download: the
// module proxy is unreachable or does not serve it.
type FetchError struct {
	Module Module
	Err    error
}

func (e *FetchError) Error() string {
	return fmt.Sprintf("fetching %s, the upstream module %s is cut on: %v", e.Module, Kubernetes, e.Err)
}

func (e *FetchError) Unwrap() error { return e.Err }

// BaseTag is the tag of the scratch repository's first commit: the base
// modules, unpatched.
const BaseTag = "base"

// committer commits the base and is the author and committer of the patches
// applied to it.
var committer = gitexec.Ident{Name: "carry", Email: "carry@localhost", Date: "@0 +0000"}

// Checkout replaces dst with a git repository whose first commit, tagged
// BaseTag, holds every module of pr.Base, its zip verified against its
// hash, at its StagingDir. A module the go command cannot download is a
// *FetchError.
func Checkout(ctx context.Context, pr *PR, dst string) (gitexec.Repo, error) {
	repo := gitexec.Repo{Dir: dst, Env: committer.Env()}
	if err := os.RemoveAll(dst); err != nil {
		return repo, err
	}
	// go mod download runs outside any module, so that no go.mod, go.work or
	// replace directive has a say in what it fetches.
	outside, err := os.MkdirTemp("", "carry-upstream-")
	if err != nil {
		return repo, err
	}
	defer os.RemoveAll(outside)
	for _, m := range pr.Base {
		d, err := modcache.Fetch(ctx, outside, m.Version)
		if err != nil {
			return repo, &FetchError{Module: m, Err: err}
		}
		if err := modcache.VerifyZip(m.Version, d.Zip, m.ZipHash); err != nil {
			return repo, fmt.Errorf("%s: %w", filepath.Join(pr.Dir, BaseFile), err)
		}
		if err := modcache.Extract(filepath.Join(dst, filepath.FromSlash(m.StagingDir())), m.Version, d.Zip); err != nil {
			return repo, err
		}
	}
	if err := writeGoWork(dst, pr.Base); err != nil {
		return repo, err
	}
	for _, args := range [][]string{
		{"-c", "init.defaultBranch=upstream", "init", "-q"},
		{"add", "-A", "-f", "."},
		{"commit", "-q", "-m", "upstream modules " + baseNames(pr.Base)},
		{"tag", BaseTag},
	} {
		if _, err := repo.Run(ctx, args...); err != nil {
			return repo, err
		}
	}
	return repo, nil
}

// writeGoWork writes dst/go.work using every base module at its staging
// directory, as kubernetes/kubernetes' go.work does: a patch to one staging
// module builds against the others as patched, not as the proxy serves
// them. Its go version is the newest the modules' go.mod files name.
func writeGoWork(dst string, mods []Module) error {
	work := &modfile.WorkFile{Syntax: &modfile.FileSyntax{}}
	goVersion := ""
	for _, m := range mods {
		file := filepath.Join(dst, filepath.FromSlash(m.StagingDir()), "go.mod")
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		f, err := modfile.ParseLax(file, data, nil)
		if err != nil {
			return err
		}
		if f.Go != nil && (goVersion == "" || semver.Compare("v"+f.Go.Version, "v"+goVersion) > 0) {
			goVersion = f.Go.Version
		}
		if err := work.AddUse("./"+m.StagingDir(), m.Path); err != nil {
			return err
		}
	}
	if goVersion != "" {
		if err := work.AddGoStmt(goVersion); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dst, "go.work"), modfile.Format(work.Syntax), 0o644)
}

func baseNames(mods []Module) string {
	var names []string
	for _, m := range mods {
		names = append(names, m.String())
	}
	return strings.Join(names, ", ")
}

// ApplyToCopy checks out pr's base into dst (Checkout) and applies its
// series there with git am, one commit a patch. An error names the patch and
// the modules it did not apply to.
func ApplyToCopy(ctx context.Context, pr *PR, dst string) (gitexec.Repo, error) {
	repo, err := Checkout(ctx, pr, dst)
	if err != nil {
		return repo, err
	}
	for _, p := range pr.Series.Patches {
		// The patches name no author (carry export sets the submitter);
		// git am needs one.
		data, err := series.SetAuthor(p.Data, committer.Name+" <"+committer.Email+">", "")
		if err != nil {
			return repo, fmt.Errorf("%s: %w", p.Path, err)
		}
		stamped := filepath.Join(dst, ".git", "carry-am.patch")
		if err := os.WriteFile(stamped, data, 0o644); err != nil {
			return repo, err
		}
		if _, err := repo.Run(ctx, "am", "-q", "--keep-non-patch", "--no-3way", stamped); err != nil {
			return repo, fmt.Errorf("%s does not apply to %s (git am): %w", p.Path, baseNames(pr.Base), err)
		}
	}
	return repo, nil
}

// Alone is the pull request of p by itself: a series of that patch only, on
// pr's base. Each Kubernetes pull request is one patch of the series, and
// Kubernetes' CI tests it on its base without the others.
func (pr *PR) Alone(p *series.Patch) *PR {
	alone := *pr.Series
	alone.Patches = []*series.Patch{p}
	alone.Hash = ""
	return &PR{Dir: pr.Dir, Series: &alone, Base: pr.Base}
}

// TestFiles are the _test.go files the series adds or changes, and
// ChangedFiles the other files it changes, by their repository paths.
func (pr *PR) TestFiles() []string    { return pr.files(true) }
func (pr *PR) ChangedFiles() []string { return pr.files(false) }

func (pr *PR) files(tests bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range pr.Series.Patches {
		for _, f := range p.Files {
			name := f.NewName
			if f.IsDelete {
				name = f.OldName
			}
			if seen[name] || strings.HasSuffix(name, "_test.go") != tests {
				continue
			}
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}
