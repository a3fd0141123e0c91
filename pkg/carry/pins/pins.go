// Package pins derives the replace block our go.mod needs from kcp's own
// go.mod, and checks or rewrites that block.
//
// kcp's replace directives only apply when kcp is the main module. As a
// dependency, kcp's k8s.io/* requirements would resolve to upstream
// Kubernetes and its v0.0.0 requirements on its own staging modules would
// not resolve at all, so we repeat the former verbatim and redirect the
// latter to published modules.
package pins

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/kcp-carry/kcp-carry/pkg/carry/modcache"
)

// KCPModule is the module whose pins we repeat.
const KCPModule = "github.com/kcp-dev/kcp"

// Marker comments delimiting the generated block in go.mod.
const (
	BeginMarker = "// BEGIN kcp pins"
	EndMarker   = "// END kcp pins"
)

// kcpStagingDir is where kcp keeps the modules it replaces with local directories.
const kcpStagingDir = "./staging/src/github.com/kcp-dev/"

// Replace is one replace directive.
type Replace struct {
	Old, New module.Version
}

func (r Replace) String() string {
	s := r.Old.Path
	if r.Old.Version != "" {
		s += " " + r.Old.Version
	}
	s += " => " + r.New.Path
	if r.New.Version != "" {
		s += " " + r.New.Version
	}
	return s
}

// Source is what Derive needs from one kcp release.
type Source struct {
	Version   string    // kcp release, e.g. v0.32.3
	GoModPath string    // kcp's go.mod in the module cache, for error messages
	GoMod     []byte    // kcp's go.mod
	Time      time.Time // commit time of the release tag (module .info Time)
	Rev       string    // commit hash of the release tag (module .info Origin.Hash)
}

// Fetch downloads kcp at version (running the go command in dir) and reads
// its go.mod and .info from the module cache.
func Fetch(ctx context.Context, dir, version string) (*Source, error) {
	d, err := modcache.Fetch(ctx, dir, module.Version{Path: KCPModule, Version: version})
	if err != nil {
		return nil, err
	}
	gomod, err := os.ReadFile(d.GoMod)
	if err != nil {
		return nil, fmt.Errorf("reading kcp's go.mod: %w", err)
	}
	info, err := modcache.ReadInfo(d.Info)
	if err != nil {
		return nil, err
	}
	if info.Origin == nil || info.Origin.Hash == "" || info.Time.IsZero() {
		return nil, fmt.Errorf("%s: no Time or Origin.Hash; cannot name the commit of %s@%s", d.Info, KCPModule, version)
	}
	return &Source{Version: version, GoModPath: d.GoMod, GoMod: gomod, Time: info.Time, Rev: info.Origin.Hash}, nil
}

// KCPVersion returns the kcp version our go.mod requires.
func KCPVersion(f *modfile.File) (string, error) {
	for _, r := range f.Require {
		if r.Mod.Path == KCPModule {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", f.Syntax.Name, KCPModule)
}

// publication says how one of kcp's staging modules is published.
type publication int

const (
	// atKCPVersion: its own module, tagged with kcp's version.
	atKCPVersion publication = iota
	// atV2KCPMinorPatch: its own /v2 module, tagged v2.<kcp minor>.<kcp patch>.
	atV2KCPMinorPatch
	// inKCPRepo: not published on its own; only reachable as a
	// subdirectory module of the kcp repository at the release commit.
	inKCPRepo
)

// stagingPublication is the table of kcp's staging modules. It is written
// down rather than guessed because a wrong guess resolves to a module that
// may exist but hold different code. A module missing here is an error.
func stagingPublication(modPath string) (publication, bool) {
	switch modPath {
	case "github.com/kcp-dev/sdk", "github.com/kcp-dev/client-go":
		return atKCPVersion, true
	case "github.com/kcp-dev/apimachinery/v2":
		return atV2KCPMinorPatch, true
	case "github.com/kcp-dev/virtual-workspace-framework", "github.com/kcp-dev/code-generator/v3":
		return inKCPRepo, true
	}
	return 0, false
}

// Derive computes the pin block for a kcp release, sorted by module path.
func Derive(src *Source) ([]Replace, error) {
	if !semver.IsValid(src.Version) || semver.Prerelease(src.Version) != "" || semver.Build(src.Version) != "" {
		return nil, fmt.Errorf("kcp version %q is not a release version (vX.Y.Z)", src.Version)
	}
	f, err := modfile.Parse(src.GoModPath, src.GoMod, nil)
	if err != nil {
		return nil, fmt.Errorf("parsing kcp's go.mod: %w", err)
	}
	var out []Replace
	for _, r := range f.Replace {
		switch {
		case strings.HasPrefix(r.Old.Path, "k8s.io/"):
			out = append(out, Replace{Old: r.Old, New: r.New})
		case r.New.Version == "" && strings.HasPrefix(r.New.Path, kcpStagingDir):
			dir := strings.TrimPrefix(r.New.Path, kcpStagingDir)
			pub, ok := stagingPublication(r.Old.Path)
			if !ok {
				return nil, fmt.Errorf("%s:%d: replace %s => %s: pkg/carry/pins does not know how %s is published; add it to stagingPublication",
					src.GoModPath, r.Syntax.Start.Line, r.Old.Path, r.New.Path, r.Old.Path)
			}
			nv, err := published(pub, r.Old.Path, dir, src)
			if err != nil {
				return nil, err
			}
			out = append(out, Replace{Old: r.Old, New: nv})
		case r.New.Version == "":
			return nil, fmt.Errorf("%s:%d: replace %s => %s: unexpected local replacement outside %s",
				src.GoModPath, r.Syntax.Start.Line, r.Old.Path, r.New.Path, kcpStagingDir)
		}
		// Other module replacements of kcp are kcp's business; none exist today.
	}
	sort.Slice(out, func(i, j int) bool { return lessReplace(out[i], out[j]) })
	return out, nil
}

func published(pub publication, modPath, dir string, src *Source) (module.Version, error) {
	switch pub {
	case atKCPVersion:
		return module.Version{Path: modPath, Version: src.Version}, nil
	case atV2KCPMinorPatch:
		// v0.32.3 -> v2.32.3
		return module.Version{Path: modPath, Version: "v2" + strings.TrimPrefix(src.Version, semver.Major(src.Version))}, nil
	default:
		if len(src.Rev) < 12 {
			return module.Version{}, fmt.Errorf("kcp %s: commit hash %q too short for a pseudo-version", src.Version, src.Rev)
		}
		p := KCPModule + "/" + strings.TrimPrefix(kcpStagingDir, "./") + filepath.ToSlash(dir)
		return module.Version{Path: p, Version: module.PseudoVersion("", "", src.Time, src.Rev[:12])}, nil
	}
}

func lessReplace(a, b Replace) bool {
	if a.Old.Path != b.Old.Path {
		return a.Old.Path < b.Old.Path
	}
	return a.Old.Version < b.Old.Version
}
