package kcpbuild

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"

	"github.com/kcp-carry/kcp-carry/pkg/carry/pins"
)

// platformEnv is the environment that selects Options.GOOS/GOARCH; later
// entries of an exec environment win, so it goes last.
func (o Options) platformEnv() []string {
	var env []string
	if o.GOOS != "" {
		env = append(env, "GOOS="+o.GOOS)
	}
	if o.GOARCH != "" {
		env = append(env, "GOARCH="+o.GOARCH)
	}
	return env
}

// defaultOutDir keeps cross-compiled binaries apart from the host's bin/kcp:
// Root/bin for a default build, Root/bin/GOOS_GOARCH for a chosen platform.
// A race build goes to Root/bin/race.
func (o Options) defaultOutDir() string {
	if o.Race {
		return filepath.Join(o.Root, "bin", "race")
	}
	if o.GOOS == "" && o.GOARCH == "" {
		return filepath.Join(o.Root, "bin")
	}
	goos, goarch := o.GOOS, o.GOARCH
	if goos == "" {
		goos = runtime.GOOS
	}
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	return filepath.Join(o.Root, "bin", goos+"_"+goarch)
}

// CheckOverlayLinked is carry build's build-info check for callers that ship
// the binaries elsewhere (carry image): each carried module a binary links
// must come from its overlay directory. It reads foreign-platform binaries too.
func CheckOverlayLinked(binary string, overlayDirs map[string]string) error {
	return checkOverlayLinked(binary, overlayDirs)
}

// KCPVersion is the kcp version Build would build, without building it: the
// kcp release Root/go.mod requires, `git describe` of a kcp checkout, or
// what a tree without git metadata is (treeVersion).
func KCPVersion(ctx context.Context, root, kcpSource string) (string, error) {
	if kcpSource != "" {
		src, err := filepath.Abs(kcpSource)
		if err != nil {
			return "", err
		}
		if _, err := checkCheckout(src); err != nil {
			return "", err
		}
		if top, err := git(ctx, src, "rev-parse", "--show-toplevel"); err == nil && sameDir(top, src) {
			return gitVersionInfo(ctx, src).KCPDescribe, nil
		}
		tv, err := treeVersion(root, src)
		if err != nil {
			return "", err
		}
		return tv.Describe, nil
	}
	goModPath := filepath.Join(root, "go.mod")
	f, err := pins.ReadGoMod(goModPath)
	if err != nil {
		return "", err
	}
	v := requiredVersion(f, kcpModule)
	if v == "" {
		return "", fmt.Errorf("%s: does not require %s", goModPath, kcpModule)
	}
	return v, nil
}
