package kcpbuild

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

	"github.com/kcp-carry/kcp-carry/pkg/carry/modcache"
	"github.com/kcp-carry/kcp-carry/pkg/carry/overlay"
	"github.com/kcp-carry/kcp-carry/pkg/carry/pins"
	"github.com/kcp-carry/kcp-carry/pkg/carry/versionstamp"
	"github.com/kcp-carry/kcp-carry/pkg/util/atomicfile"
)

// buildModulePath names the generated module that requires kcp; it is never
// published, so it only has to be a valid path.
const buildModulePath = "kcp-carry.local/kcp-build"

// moduleMode builds the kcp release that Root/go.mod requires. The top-level
// go.mod cannot require kcp's commands (their closure includes modules these
// machines cannot fetch, and must stay buildable), so a generated module under
// .build/ requires kcp with the same pins, the carried modules redirected to
// the overlay.
func (b *builder) moduleMode(ctx context.Context) (*Result, error) {
	root := b.opts.Root
	goModPath := filepath.Join(root, "go.mod")
	rootMod, err := pins.ReadGoMod(goModPath)
	if err != nil {
		return nil, err
	}
	kcpVersion := requiredVersion(rootMod, kcpModule)
	if kcpVersion == "" {
		return nil, fmt.Errorf("%s: does not require %s", goModPath, kcpModule)
	}

	forks := b.opts.Carry.Forks()
	var overlayDirs map[string]string
	check := func(bin string) error { return checkPristineLinked(bin, forks) }
	if !b.opts.Pristine {
		ovOpts := overlay.Options{Carry: b.opts.Carry, GoWorkPath: filepath.Join(root, "go.work"), Progress: b.log}
		if b.opts.partialCarry() {
			// Never the repository's overlay, which go.work and the suite use.
			ovOpts.GoWorkPath, ovOpts.OverlayDir = "", filepath.Join(root, ".build", "overlay"+b.opts.binarySuffix())
		}
		ov, err := overlay.Run(ctx, ovOpts)
		if err != nil {
			return nil, err
		}
		overlayDirs = moduleDirs(ov)
		check = func(bin string) error { return checkOverlayLinked(bin, overlayDirs) }
	}

	dl, kcpSum, err := fetchKCPModule(ctx, root, module.Version{Path: kcpModule, Version: kcpVersion})
	if err != nil {
		return nil, err
	}
	kcpMod, err := pins.ReadGoMod(dl.GoMod)
	if err != nil {
		return nil, err
	}
	info, err := modcache.ReadInfo(dl.Info)
	if err != nil {
		return nil, err
	}

	dir := filepath.Join(root, ".build", "kcp-"+kcpVersion+b.opts.binarySuffix())
	replaces, err := b.writeBuildModule(dir, rootMod, kcpVersion, overlayDirs, kcpSum)
	if err != nil {
		return nil, err
	}
	// -mod=mod lets the go command complete the generated go.mod (it requires
	// only kcp); go.sum is seeded from kcp's own, so no hash of kcp's
	// closure comes from the checksum database.
	run := runner{env: b.goEnv("off", "-mod=mod"), stderr: b.log}
	pkgs := make([]string, len(b.opts.Commands))
	for i, c := range b.opts.Commands {
		pkgs[i] = path.Join(kcpModule, c)
	}
	b.logf("checking that kcp %s's import graph can be fetched", kcpVersion)
	unfetchable, err := checkStagingModules(ctx, run, dir, dl.Dir, kcpMod, pinnedVersions(rootMod), b.opts.Replaces)
	if err != nil {
		return nil, err
	}
	if unfetchable == nil {
		unfetchable, err = findUnfetchable(ctx, run, dir, pkgs, replaces)
		var missing *MissingSumError
		if errors.As(err, &missing) {
			missing.KCPVersion = kcpVersion
		}
		if err != nil {
			return nil, err
		}
	}
	if unfetchable != nil {
		unfetchable.KCPVersion = kcpVersion
		return nil, unfetchable
	}

	commit := "local"
	if info.Origin != nil && len(info.Origin.Hash) >= 12 {
		commit = info.Origin.Hash[:12]
	}
	id, err := b.opts.Carry.ID()
	if err != nil {
		return nil, err
	}
	v := versionstamp.Info{
		KubeVersion: requiredVersion(kcpMod, "k8s.io/kubernetes"),
		KCPDescribe: kcpVersion,
		GitCommit:   commit,
		TreeState:   "clean",
		CarryID:     id,
		BuildDate:   b.opts.Now,
		Pristine:    b.opts.Pristine,
		Race:        b.opts.Race,
	}
	ldflags, err := v.LDFlags()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dl.GoMod, err)
	}
	bins, err := b.goBuild(ctx, run, dir, pkgs, ldflags, check)
	if err != nil {
		return nil, err
	}
	return b.result("module", kcpVersion, v, bins, overlayDirs, forks), nil
}

// writeBuildModule writes dir/go.mod (require kcp, Root's replaces with the
// carried modules pointing at the overlay, plus --replace directories) and
// seeds dir/go.sum with Root's and kcp's own (kcpSum). It returns the replacement -> required path
// map used to name an unfetchable module as kcp requires it.
func (b *builder) writeBuildModule(dir string, rootMod *modfile.File, kcpVersion string, overlayDirs map[string]string, kcpSum []byte) (map[module.Version]string, error) {
	f := new(modfile.File)
	if err := f.AddModuleStmt(buildModulePath); err != nil {
		return nil, err
	}
	goVersion := "1.26.0"
	if rootMod.Go != nil {
		goVersion = rootMod.Go.Version
	}
	if err := f.AddGoStmt(goVersion); err != nil {
		return nil, err
	}
	if err := f.AddRequire(kcpModule, kcpVersion); err != nil {
		return nil, err
	}
	replaced := map[module.Version]string{}
	for _, r := range rootMod.Replace {
		newPath, newVersion := r.New.Path, r.New.Version
		if dir, ok := overlayDirs[r.Old.Path]; ok {
			newPath, newVersion = dir, ""
		} else if dir, ok := b.opts.Replaces[r.Old.Path]; ok {
			newPath, newVersion = dir, ""
		}
		if err := f.AddReplace(r.Old.Path, r.Old.Version, newPath, newVersion); err != nil {
			return nil, err
		}
		if newVersion != "" {
			replaced[module.Version{Path: newPath, Version: newVersion}] = r.Old.Path
		}
	}
	for mod, d := range b.opts.Replaces {
		if !hasReplace(rootMod, mod) {
			if err := f.AddReplace(mod, "", d, ""); err != nil {
				return nil, err
			}
		}
	}
	f.Cleanup()
	data, err := f.Format()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(dir, "go.mod"), data, 0o644); err != nil {
		return nil, err
	}
	sum, err := os.ReadFile(filepath.Join(b.opts.Root, "go.sum"))
	if err != nil {
		return nil, err
	}
	sum = mergeLines(sum, kcpSum)
	// Keep sums the go command added in earlier runs: they are for this kcp
	// version only, and refetching them costs minutes on a cold cache.
	if old, err := os.ReadFile(filepath.Join(dir, "go.sum")); err == nil {
		sum = mergeLines(sum, old)
	}
	if err := atomicfile.Write(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		return nil, err
	}
	return replaced, nil
}

func (b *builder) result(mode, kcpVersion string, v versionstamp.Info, bins []string, overlayDirs map[string]string, forks map[string]module.Version) *Result {
	r := &Result{Mode: mode, KCPVersion: kcpVersion, GitVersion: v.GitVersion(), Binaries: bins, Overlay: overlayDirs}
	if b.opts.Pristine {
		r.Pristine, r.Pins = true, forks
	}
	r.Race = b.opts.Race
	r.Without = b.opts.Carry.LeftOut
	return r
}

func moduleDirs(r *overlay.Result) map[string]string {
	dirs := map[string]string{}
	for _, m := range r.Modules {
		dirs[m.Module] = m.Dir
	}
	return dirs
}

func requiredVersion(f *modfile.File, mod string) string {
	for _, r := range f.Require {
		if r.Mod.Path == mod {
			return r.Mod.Version
		}
	}
	return ""
}

func hasReplace(f *modfile.File, mod string) bool {
	for _, r := range f.Replace {
		if r.Old.Path == mod {
			return true
		}
	}
	return false
}

// mergeLines returns the lines of a followed by those of b not already in a.
func mergeLines(a, b []byte) []byte {
	seen := map[string]bool{}
	var out []byte
	for _, data := range [][]byte{a, b} {
		for _, line := range strings.SplitAfter(string(data), "\n") {
			key := strings.TrimSpace(line)
			if key == "" || seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, key+"\n"...)
		}
	}
	return out
}

// pinnedVersions maps each module that f replaces by a module version to that version.
func pinnedVersions(f *modfile.File) map[string]module.Version {
	pinned := map[string]module.Version{}
	for _, r := range f.Replace {
		if r.New.Version != "" {
			pinned[r.Old.Path] = r.New
		}
	}
	return pinned
}
