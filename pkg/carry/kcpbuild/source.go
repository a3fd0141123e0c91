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
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/kcp-carry/kcp-carry/pkg/carry/gowork"
	"github.com/kcp-carry/kcp-carry/pkg/carry/overlay"
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
	patchesDir := filepath.Join(b.opts.Root, "staging-patches")
	carried, err := overlay.CarriedModules(patchesDir)
	if err != nil {
		return nil, err
	}
	pins, err := overlay.PinsFromGoMod(filepath.Join(src, "go.mod"), carried)
	if err != nil {
		return nil, err
	}

	ovOpts, workDir, err := b.sourceOverlayOptions(pins, src)
	if err != nil {
		return nil, err
	}
	var overlayDirs map[string]string
	check := func(bin string) error { return checkPristineLinked(bin, pins) }
	if b.opts.Pristine {
		workDir += "-pristine"
	} else {
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

	id, err := carryID(patchesDir)
	if err != nil {
		return nil, err
	}
	v, err := b.sourceVersionInfo(ctx, src, pins)
	if err != nil {
		return nil, err
	}
	v.KubeVersion = requiredVersion(kcpMod, "k8s.io/kubernetes")
	v.CarryID = id
	v.BuildDate = b.opts.Now
	v.Pristine = b.opts.Pristine
	ldflags, err := v.LDFlags()
	if err != nil {
		return nil, fmt.Errorf("%s/go.mod: %w", src, err)
	}
	run := runner{env: b.goEnv(goWork, ""), stderr: b.log}
	bins, err := b.goBuild(ctx, run, src, pkgs, ldflags, check)
	if err != nil {
		return nil, err
	}
	return b.result("source", v.KCPDescribe, v, bins, overlayDirs, pins), nil
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
	f, err := readModFile(filepath.Join(dir, "go.mod"))
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
// under .build/ is built from the checkout's go.sum.
func (b *builder) sourceOverlayOptions(pins map[string]module.Version, src string) (overlay.Options, string, error) {
	root := b.opts.Root
	ours, err := overlay.PinsFromGoMod(filepath.Join(root, "go.mod"), keys(pins))
	if err == nil && maps.Equal(ours, pins) {
		return overlay.Options{Root: root, GoWorkPath: filepath.Join(root, "go.work"), Progress: b.log},
			filepath.Join(root, ".build", "source-"+pathDigest(src)), nil
	}
	workDir := filepath.Join(root, ".build", "source-"+pathDigest(src))
	return overlay.Options{
		Root:       root,
		Pins:       pins,
		GoSumPath:  filepath.Join(src, "go.sum"),
		OverlayDir: filepath.Join(workDir, "overlay"),
		Progress:   b.log,
	}, workDir, nil
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
// has no describe: its version comes from Options.KCPVersion, or from Root's
// go.mod when the tree pins the same fork as Root does (the same release).
func (b *builder) sourceVersionInfo(ctx context.Context, src string, pins map[string]module.Version) (VersionInfo, error) {
	if top, err := git(ctx, src, "rev-parse", "--show-toplevel"); err == nil && sameDir(top, src) {
		v := gitVersionInfo(ctx, src)
		if b.opts.KCPVersion != "" {
			v.KCPDescribe = b.opts.KCPVersion
		}
		return v, nil
	}
	v := VersionInfo{GitCommit: "unknown", TreeState: "archive", KCPDescribe: b.opts.KCPVersion}
	if v.KCPDescribe != "" {
		return v, nil
	}
	goModPath := filepath.Join(b.opts.Root, "go.mod")
	rootMod, err := readModFile(goModPath)
	if err != nil {
		return v, err
	}
	ours, err := overlay.PinsFromGoMod(goModPath, keys(pins))
	if kcpVersion := requiredVersion(rootMod, kcpModule); err == nil && kcpVersion != "" && maps.Equal(ours, pins) {
		b.logf("%s is not a git checkout: stamping kcp %s, the version %s requires (it pins the same fork); --kcp-version overrides", src, kcpVersion, goModPath)
		v.KCPDescribe = kcpVersion
		return v, nil
	}
	return v, &SourceError{Dir: src, Reason: fmt.Sprintf("no git metadata to read its kcp version from, and it pins another fork than %s: pass --kcp-version", goModPath)}
}

func sameDir(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// gitVersionInfo reads what kcp's Makefile reads from git.
func gitVersionInfo(ctx context.Context, dir string) VersionInfo {
	v := VersionInfo{GitCommit: "local", TreeState: "dirty"}
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
