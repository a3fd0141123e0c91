// Package carryset loads the carry from the repository once: the modules
// carried under staging-patches/, each one's series, the fork version go.mod
// pins it at and that zip's go.sum hash, and where the overlay goes. The
// commands load it at the start and hand the same value to every step, so no
// step finds the carry again from paths.
package carryset

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/module"

	"github.com/kcp-carry/kcp-carry/pkg/carry/modcache"
	"github.com/kcp-carry/kcp-carry/pkg/carry/pins"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
)

// patchesDirName is the one place the carry's directory is named.
const patchesDirName = "staging-patches"

// Carry is the repository's carry, checked as a whole before anything is
// downloaded or written.
type Carry struct {
	// Root is the repository root (absolute): the go command runs there.
	Root string
	// PatchesDir holds a directory per carried module path, each with a
	// series file.
	PatchesDir string
	// OverlayDir is where `carry overlay` puts the patched trees.
	OverlayDir string
	// GoModPath holds the fork pins, GoSumPath their zips' hashes.
	GoModPath string
	GoSumPath string
	// Modules are the carried modules, sorted by module path.
	Modules []*Carried
	// goSumErr is why go.sum could not be read: only what fetches a fork
	// zip needs it (CheckZipHashes), not what reads pins or series.
	goSumErr error
	// LeftOut names the patches Without left out, as <module>/<file name>,
	// in series order: such a carry is never the repository's own.
	LeftOut []string
}

// Carried is one carried module: its series, the fork version it patches
// and that zip's hash.
type Carried struct {
	Module  string
	Fork    module.Version
	Series  *series.Series
	ZipHash string
	// zipHashErr is why go.sum has no hash for Fork.
	zipHashErr error
}

// Load reads the carry of the repository at root. Errors name the file or
// module at fault; every module's are reported together.
func Load(root string) (*Carry, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	c := &Carry{
		Root:       root,
		PatchesDir: filepath.Join(root, patchesDirName),
		OverlayDir: filepath.Join(root, ".overlay"),
		GoModPath:  filepath.Join(root, "go.mod"),
		GoSumPath:  filepath.Join(root, "go.sum"),
	}
	paths, err := CarriedModules(c.PatchesDir)
	if err != nil {
		return nil, err
	}
	forks, err := pins.FromGoMod(c.GoModPath, paths)
	if err != nil {
		return nil, err
	}
	sums, err := modcache.ReadGoSum(c.GoSumPath)
	c.goSumErr = err
	var errs []error
	for _, mod := range paths {
		s, err := series.Load(filepath.Join(c.PatchesDir, filepath.FromSlash(mod)))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", mod, err))
			continue
		}
		m := &Carried{Module: mod, Fork: forks[mod], Series: s}
		if sums != nil {
			if m.ZipHash, err = sums.ZipHash(m.Fork); err != nil {
				m.zipHashErr = fmt.Errorf("%s: %w", mod, err)
			}
		}
		c.Modules = append(c.Modules, m)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// CheckZipHashes fails unless go.sum holds the zip hash of every carried
// module's fork: what must hold before a fork zip is fetched.
func (c *Carry) CheckZipHashes() error {
	if c.goSumErr != nil {
		return c.goSumErr
	}
	var errs []error
	for _, m := range c.Modules {
		if m.zipHashErr != nil {
			errs = append(errs, m.zipHashErr)
		}
	}
	return errors.Join(errs...)
}

// Repin is the same carry on other fork versions (a kcp tree's pins), their
// zip hashes read from goSumPath: what carry build overlays for a tree that
// pins the fork elsewhere.
func (c *Carry) Repin(forks map[string]module.Version, goSumPath string) (*Carry, error) {
	sums, err := modcache.ReadGoSum(goSumPath)
	if err != nil {
		return nil, err
	}
	re := *c
	re.GoSumPath, re.goSumErr = goSumPath, nil
	re.Modules = nil
	var errs []error
	for _, m := range c.Modules {
		fork, ok := forks[m.Module]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: no pin given for the module", m.Module))
			continue
		}
		zh, err := sums.ZipHash(fork)
		if err != nil && fork == m.Fork && m.ZipHash != "" {
			// A tree that builds no package of the module keeps no zip
			// hash for it (go mod tidy); at the carry's own version the
			// repository's go.sum has it.
			zh, err = m.ZipHash, nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Module, err))
			continue
		}
		re.Modules = append(re.Modules, &Carried{Module: m.Module, Fork: fork, Series: m.Series, ZipHash: zh})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &re, nil
}

// Paths are the carried module paths, sorted.
func (c *Carry) Paths() []string {
	paths := make([]string, len(c.Modules))
	for i, m := range c.Modules {
		paths[i] = m.Module
	}
	return paths
}

// Series maps each carried module path to its series.
func (c *Carry) Series() map[string]*series.Series {
	out := make(map[string]*series.Series, len(c.Modules))
	for _, m := range c.Modules {
		out[m.Module] = m.Series
	}
	return out
}

// Forks maps each carried module path to the fork version it patches.
func (c *Carry) Forks() map[string]module.Version {
	out := make(map[string]module.Version, len(c.Modules))
	for _, m := range c.Modules {
		out[m.Module] = m.Fork
	}
	return out
}

// SeriesFile is where mod's series file is, carried or not.
func (c *Carry) SeriesFile(mod string) string {
	return filepath.Join(c.PatchesDir, filepath.FromSlash(mod), series.FileName)
}

// CheckNotEmpty fails for a carry with no modules: there is nothing to
// build, stamp or export.
func (c *Carry) CheckNotEmpty() error {
	if len(c.Modules) == 0 {
		return fmt.Errorf("%s: no carried modules (no series files)", c.PatchesDir)
	}
	return nil
}

// ID is a digest of every series and patch file, so a version string names
// the exact carry a binary was built with.
func (c *Carry) ID() (string, error) {
	if err := c.CheckNotEmpty(); err != nil {
		return "", err
	}
	h := sha256.New()
	for _, m := range c.Modules {
		fmt.Fprintf(h, "%s %s\n", m.Module, m.Series.Hash)
	}
	return hex.EncodeToString(h.Sum(nil))[:10], nil
}

// CarriedModules lists the module paths carried in patchesDir: every
// directory holding a series file, named by its path relative to patchesDir.
func CarriedModules(patchesDir string) ([]string, error) {
	var mods []string
	err := filepath.WalkDir(patchesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != series.FileName {
			return nil
		}
		rel, err := filepath.Rel(patchesDir, filepath.Dir(path))
		if err != nil {
			return err
		}
		mod := filepath.ToSlash(rel)
		if err := module.CheckPath(mod); err != nil {
			return fmt.Errorf("%s: directory does not name a module path: %w", path, err)
		}
		mods = append(mods, mod)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("finding carried modules: %w", err)
	}
	sort.Strings(mods)
	// A module tree nested in another's overlay directory would be hashed
	// and refreshed as part of the outer one.
	for i := 1; i < len(mods); i++ {
		for j := 0; j < i; j++ {
			if strings.HasPrefix(mods[i], mods[j]+"/") {
				return nil, fmt.Errorf("%s: carries both %s and the nested module %s; carry cannot overlay nested modules", patchesDir, mods[j], mods[i])
			}
		}
	}
	return mods, nil
}

// Without is the carry less the patches specs name (`carry build --without`):
// each spec is a patch's file name (with or without .patch) or its number in
// the series ("0002" or "2"), optionally after its module path
// ("k8s.io/apiserver/0002"). A spec that names no patch, or a number that
// names patches of more than one module, is refused, listing the series.
func (c *Carry) Without(specs []string) (*Carry, error) {
	if len(specs) == 0 {
		return c, nil
	}
	leaveOut := map[string][]string{} // module -> file names
	for _, spec := range specs {
		var found []string // <module>/<file name>
		for _, m := range c.Modules {
			name := spec
			if mod, rest, ok := cutModule(spec); ok {
				if mod != m.Module {
					continue
				}
				name = rest
			}
			for _, p := range m.Series.Patches {
				if patchNamed(p.Name, name) {
					found = append(found, m.Module+"/"+p.Name)
					leaveOut[m.Module] = append(leaveOut[m.Module], p.Name)
				}
			}
		}
		switch {
		case len(found) == 0:
			return nil, fmt.Errorf("--without %s: no patch of %s is named or numbered so; the series: %s", spec, c.PatchesDir, c.listing())
		case len(found) > 1:
			return nil, fmt.Errorf("--without %s: names %s; put the module path first (--without %s)", spec, strings.Join(found, " and "), found[0])
		}
	}
	re := *c
	re.Modules = nil
	re.LeftOut = nil
	for _, m := range c.Modules {
		names := leaveOut[m.Module]
		if len(names) == 0 {
			re.Modules = append(re.Modules, m)
			continue
		}
		s, err := m.Series.Without(names...)
		if err != nil {
			return nil, err
		}
		cm := *m
		cm.Series = s
		re.Modules = append(re.Modules, &cm)
		for _, p := range m.Series.Patches {
			if slices.Contains(names, p.Name) {
				re.LeftOut = append(re.LeftOut, m.Module+"/"+p.Name)
			}
		}
	}
	return &re, nil
}

// cutModule splits "<module path>/<patch>" at its last slash.
func cutModule(spec string) (mod, name string, ok bool) {
	i := strings.LastIndex(spec, "/")
	if i < 0 {
		return "", spec, false
	}
	return spec[:i], spec[i+1:], true
}

// patchNamed says whether spec names the patch file name: the name itself,
// the name without .patch, or its number.
func patchNamed(name, spec string) bool {
	if spec == name || spec+".patch" == name {
		return true
	}
	n, err := strconv.Atoi(spec)
	if err != nil || n < 0 {
		return false
	}
	num, _, _ := strings.Cut(name, "-")
	m, err := strconv.Atoi(num)
	return err == nil && m == n
}

// listing names every module's patches, for an error message.
func (c *Carry) listing() string {
	var parts []string
	for _, m := range c.Modules {
		parts = append(parts, m.Module+": "+strings.Join(m.Series.Names(), ", "))
	}
	return strings.Join(parts, "; ")
}

// LeftOutNumbers are the numbers of the patches Without left out ("0002"),
// in series order: what names a build without them.
func (c *Carry) LeftOutNumbers() []string {
	var nums []string
	for _, p := range c.LeftOut {
		_, name, _ := cutModule(p)
		num, _, _ := strings.Cut(name, "-")
		nums = append(nums, num)
	}
	return nums
}
