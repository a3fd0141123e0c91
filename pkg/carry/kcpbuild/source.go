package kcpbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"

	"github.com/kcp-carry/kcp-carry/pkg/carry/modcache"
	"github.com/kcp-carry/kcp-carry/pkg/carry/pins"

	"github.com/kcp-carry/kcp-carry/pkg/carry/gowork"
	"github.com/kcp-carry/kcp-carry/pkg/carry/overlay"
	"github.com/kcp-carry/kcp-carry/pkg/carry/versionstamp"
)

// SourceError says that --kcp-source does not name a usable kcp checkout.
type SourceError struct {
	Dir    string
	Reason string
}

func (e *SourceError) Error() string {
	return fmt.Sprintf("--kcp-source %s: not a kcp checkout: %s", e.Dir, e.Reason)
}

// sourceMode builds a kcp git checkout of any version: the fork pin is read
// from the checkout's go.mod, the carry is overlaid onto that pin, and the
// build runs inside a generated workspace (`use` the checkout, `replace` the
// carried modules), leaving the checkout untouched.
func (b *builder) sourceMode(ctx context.Context) (*Result, error) {
	src, err := filepath.Abs(b.opts.KCPSource)
	if err != nil {
		return nil, err
	}
	kcpMod, err := checkCheckout(src)
	if err != nil {
		return nil, err
	}
	forks, err := pins.FromGoMod(filepath.Join(src, "go.mod"), b.opts.Carry.Paths())
	if err != nil {
		return nil, err
	}

	workDir := filepath.Join(b.opts.Carry.Root, ".build", "source-"+pathDigest(src)+b.opts.binarySuffix())
	var overlayDirs map[string]string
	check := func(bin string) error { return checkPristineLinked(bin, forks) }
	if !b.opts.Pristine {
		ovOpts, err := b.sourceOverlayOptions(forks, workDir, src)
		if err != nil {
			return nil, err
		}
		ov, err := overlay.Run(ctx, ovOpts)
		if err != nil {
			return nil, err
		}
		overlayDirs = moduleDirs(ov)
		check = func(bin string) error { return checkOverlayLinked(bin, overlayDirs) }
	}

	goWork := filepath.Join(workDir, "go.work")
	if err := b.writeSourceWorkspace(goWork, src, kcpMod, overlayDirs); err != nil {
		return nil, err
	}

	var pkgs []string
	for _, c := range b.opts.Commands {
		if _, err := os.Stat(filepath.Join(src, filepath.FromSlash(c))); err != nil {
			b.logf("skipping %s: not in %s", c, src)
			continue
		}
		pkgs = append(pkgs, "./"+c)
	}
	if len(pkgs) == 0 {
		return nil, &SourceError{Dir: src, Reason: fmt.Sprintf("none of %s exists", strings.Join(b.opts.Commands, ", "))}
	}

	id, err := b.opts.Carry.ID()
	if err != nil {
		return nil, err
	}
	v, err := b.sourceVersionInfo(ctx, src)
	if err != nil {
		return nil, err
	}
	v.KubeVersion = requiredVersion(kcpMod, "k8s.io/kubernetes")
	v.CarryID = id
	v.BuildDate = b.opts.Now
	v.Pristine = b.opts.Pristine
	v.Race = b.opts.Race
	ldflags, err := v.LDFlags()
	if err != nil {
		return nil, fmt.Errorf("%s/go.mod: %w", src, err)
	}
	run := runner{env: b.goEnv(goWork, ""), stderr: b.log}
	bins, err := b.goBuild(ctx, run, src, pkgs, ldflags, check)
	if err != nil {
		return nil, err
	}
	return b.result("source", v.KCPDescribe, v, bins, overlayDirs, forks), nil
}

// checkCheckout makes sure dir looks like a kcp checkout before anything is
// written: a go.mod for github.com/kcp-dev/kcp and the cmd/kcp main package.
func checkCheckout(dir string) (*modfile.File, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, &SourceError{Dir: dir, Reason: err.Error()}
	}
	if !st.IsDir() {
		return nil, &SourceError{Dir: dir, Reason: "not a directory"}
	}
	f, err := pins.ReadGoMod(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, &SourceError{Dir: dir, Reason: err.Error()}
	}
	if f.Module == nil || f.Module.Mod.Path != kcpModule {
		got := "no module statement"
		if f.Module != nil {
			got = "module " + f.Module.Mod.Path
		}
		return nil, &SourceError{Dir: dir, Reason: fmt.Sprintf("go.mod declares %s, want module %s", got, kcpModule)}
	}
	if _, err := os.Stat(filepath.Join(dir, "cmd", "kcp")); err != nil {
		return nil, &SourceError{Dir: dir, Reason: "no cmd/kcp directory"}
	}
	return f, nil
}

// sourceOverlayOptions decides where the checkout's fork pin is overlaid. When
// the checkout pins the same fork versions as our go.mod, the repository's own
// overlay serves (and shares its build cache); otherwise a separate overlay
// under .build/ is built from the checkout's go.sum, as it is for a --without
// build, whose overlay is never the repository's.
func (b *builder) sourceOverlayOptions(forks map[string]module.Version, workDir, src string) (overlay.Options, error) {
	c := b.opts.Carry
	if maps.Equal(c.Forks(), forks) && !b.opts.partialCarry() {
		return overlay.Options{Carry: c, GoWorkPath: filepath.Join(c.Root, "go.work"), Progress: b.log}, nil
	}
	repinned, err := c.Repin(forks, filepath.Join(src, "go.sum"))
	if err != nil {
		return overlay.Options{}, err
	}
	return overlay.Options{Carry: repinned, OverlayDir: filepath.Join(workDir, "overlay"), Progress: b.log}, nil
}

// writeSourceWorkspace writes the generated go.work: the checkout as the only
// workspace module, the carried modules replaced by the overlay, and any
// --replace directories.
func (b *builder) writeSourceWorkspace(goWork, src string, kcpMod *modfile.File, overlayDirs map[string]string) error {
	// The workspace holds the checkout and the overlay of our pins: it needs
	// the newer of the two go directives.
	goVersion, err := gowork.GoVersion(filepath.Join(b.opts.Root, "go.mod"))
	if err != nil {
		return err
	}
	if kcpMod.Go != nil {
		goVersion = gowork.Newer(goVersion, kcpMod.Go.Version)
	}
	w, err := gowork.New(goWork, goVersion)
	if err != nil {
		return err
	}
	if err := w.AddUse(src); err != nil {
		return err
	}
	for mod, dir := range overlayDirs {
		if err := w.AddReplace(mod, dir); err != nil {
			return err
		}
	}
	for mod, dir := range b.opts.Replaces {
		if err := w.AddReplace(mod, dir); err != nil {
			return err
		}
	}
	w.Work.SortBlocks()
	return w.Write()
}

// sourceVersionInfo reads what kcp's Makefile reads from git. A tree that is
// not the top of a git checkout (an archive such as `git archive` output)
// has no describe: its version is Options.KCPVersion, or derived from the
// tree (treeVersion), never assumed from Root's go.mod.
func (b *builder) sourceVersionInfo(ctx context.Context, src string) (versionstamp.Info, error) {
	if top, err := git(ctx, src, "rev-parse", "--show-toplevel"); err == nil && sameDir(top, src) {
		v := gitVersionInfo(ctx, src)
		if b.opts.KCPVersion != "" {
			v.KCPDescribe = b.opts.KCPVersion
		}
		return v, nil
	}
	v := versionstamp.Info{GitCommit: "unknown", TreeState: "archive", KCPDescribe: b.opts.KCPVersion}
	if v.KCPDescribe != "" {
		return v, nil
	}
	tv, err := treeVersion(b.opts.Root, src)
	if err != nil {
		return v, err
	}
	b.logf("%s is not a git checkout: stamping kcp %s (%s); --kcp-version overrides", src, tv.Describe, tv.Reason)
	v.KCPDescribe = tv.Describe
	if tv.Commit != "" {
		v.GitCommit = tv.Commit
	}
	return v, nil
}

// archiveDirRE matches the top directory `git archive --prefix=kcp-<commit>/`
// gives a tree of kcp at a commit.
var archiveDirRE = regexp.MustCompile(`^kcp-([0-9a-f]{7,40})$`)

// TreeVersion is the kcp version of a source tree without git metadata.
type TreeVersion struct {
	// Describe is what the build stamps: a release tag or v0.0.0-<commit>.
	Describe string
	// Commit is the short commit a git archive's directory names, if any.
	Commit string
	// Reason says how it was derived.
	Reason string
}

// treeVersion derives the kcp version of a tree without git metadata: the
// release Root/go.mod requires when the tree is exactly that release's module
// source (its module hash equals go.sum's h1: line), else the commit a `git
// archive` top directory names (kcp-<commit>). Anything else is refused: a
// tree that pins the same fork is not thereby the same release (kcp main
// pins the fork v0.32.3 pins).
func treeVersion(root, src string) (TreeVersion, error) {
	goModPath := filepath.Join(root, "go.mod")
	rootMod, err := pins.ReadGoMod(goModPath)
	if err != nil {
		return TreeVersion{}, err
	}
	release := requiredVersion(rootMod, kcpModule)
	var hashNote string
	if release != "" {
		m := module.Version{Path: kcpModule, Version: release}
		sum, err := modcache.ReadGoSum(filepath.Join(root, "go.sum"))
		if err != nil {
			return TreeVersion{}, err
		}
		want, err := sum.ZipHash(m)
		if err != nil {
			return TreeVersion{}, err
		}
		got, err := moduleHash(src, m)
		if err != nil {
			return TreeVersion{}, err
		}
		if got == want {
			return TreeVersion{Describe: release, Reason: fmt.Sprintf("its module hash %s is go.sum's for %s@%s", got, kcpModule, release)}, nil
		}
		hashNote = fmt.Sprintf("it is not %s (module hash %s, go.sum has %s for %s)", release, got, want, release)
	}
	if m := archiveDirRE.FindStringSubmatch(filepath.Base(src)); m != nil {
		commit := m[1]
		if len(commit) > 12 {
			commit = commit[:12]
		}
		return TreeVersion{Describe: "v0.0.0-" + commit, Commit: commit,
			Reason: fmt.Sprintf("%s, and its directory %s names commit %s", hashNote, filepath.Base(src), commit)}, nil
	}
	return TreeVersion{}, &SourceError{Dir: src, Reason: fmt.Sprintf("no git metadata to read its kcp version from: %s, and its directory name is not kcp-<commit> (git archive --prefix): pass --kcp-version", hashNote)}
}

// moduleHash is the h1: hash of the module zip `go mod download` would make
// of dir as module m: equal to go.sum's line exactly when dir holds that
// module's source.
func moduleHash(dir string, m module.Version) (string, error) {
	f, err := os.CreateTemp("", "kcp-tree-*.zip")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := modzip.CreateFromDir(f, m, dir); err != nil {
		return "", fmt.Errorf("hashing %s as %s@%s: %w", dir, m.Path, m.Version, err)
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	h, err := dirhash.HashZip(f.Name(), dirhash.Hash1)
	if err != nil {
		return "", fmt.Errorf("hashing %s as %s@%s: %w", dir, m.Path, m.Version, err)
	}
	return h, nil
}

func sameDir(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// gitVersionInfo reads what kcp's Makefile reads from git.
func gitVersionInfo(ctx context.Context, dir string) versionstamp.Info {
	v := versionstamp.Info{GitCommit: "local", TreeState: "dirty"}
	if out, err := git(ctx, dir, "rev-parse", "--short", "HEAD"); err == nil {
		v.GitCommit = out
	}
	if _, err := git(ctx, dir, "diff", "--quiet"); err == nil {
		v.TreeState = "clean"
	}
	v.KCPDescribe = "v0.0.0-" + v.GitCommit
	if out, err := git(ctx, dir, "describe", "--tags", "--match=v*", "--abbrev=14", v.GitCommit+"^{commit}"); err == nil {
		v.KCPDescribe = out
	}
	return v
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

func pathDigest(p string) string {
	sum := sha256.Sum256([]byte(p))
	return hex.EncodeToString(sum[:])[:12]
}

func keys(m map[string]module.Version) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
