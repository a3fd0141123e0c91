// Package overlay builds patched copies of fork modules ("the overlay") from
// verified module zips and the carry (carryset), and points a
// go.work at them.
//
// Nothing in go.mod changes: the workspace file is the only switch between
// the patched build (default) and the pristine fork (GOWORK=off), which is
// what every regression test's positive control relies on.
package overlay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/mod/module"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/gowork"
	"github.com/kcp-carry/kcp-carry/pkg/carry/modcache"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/util/atomicfile"
)

// Options configures Run. Carry (or Root, to load it) is required.
type Options struct {
	// Carry is what to overlay; nil loads the carry of Root.
	Carry *carryset.Carry
	// Root is the repository whose carry is loaded when Carry is nil.
	Root string
	// OverlayDir receives the patched trees. Default Carry.OverlayDir. It is
	// replaced as a whole, by rename, so it must be carry's alone.
	OverlayDir string
	// GoWorkPath is the go.work to point at the overlay. Empty means do
	// not touch any go.work.
	GoWorkPath string
	// Filter, when not nil, applies only the file diffs whose module-relative
	// path it accepts (for example only _test.go files). FilterName must then
	// name it; it is recorded in the stamps so an overlay built with one
	// filter is never taken as up to date for another.
	Filter     func(path string) bool
	FilterName string
	// Progress receives a line per step. nil discards.
	Progress io.Writer
	// Force rebuilds even when up to date, discarding hand edits.
	Force bool
}

// Result says what Run did.
type Result struct {
	// UpToDate is true when the existing overlay already matched its inputs
	// and nothing was rebuilt.
	UpToDate   bool           `json:"upToDate"`
	OverlayDir string         `json:"overlayDir"`
	Modules    []ModuleResult `json:"modules"`
	// GoWork is the go.work path when one is managed; GoWorkChanged says
	// whether it was written.
	GoWork        string `json:"goWork,omitempty"`
	GoWorkChanged bool   `json:"goWorkChanged"`
}

// ModuleResult describes one module's patched tree.
type ModuleResult struct {
	Module  string         `json:"module"`
	Fork    module.Version `json:"fork"`
	ZipHash string         `json:"zipHash"`
	// Applied lists the patches that changed at least one file (with a
	// Filter, patches touching no accepted file are skipped).
	Applied  []string `json:"applied"`
	Dir      string   `json:"dir"`
	TreeHash string   `json:"treeHash"`
	// Rebuilt is false when the tree was already up to date.
	Rebuilt bool `json:"rebuilt"`
}

// StampOf returns the input half of a carried module's stamp.
func StampOf(m *carryset.Carried, filter string) Stamp {
	return Stamp{
		Module:     m.Module,
		Fork:       m.Fork.Path,
		Version:    m.Fork.Version,
		ZipHash:    m.ZipHash,
		SeriesHash: m.Series.Hash,
		Filter:     filter,
	}
}

// Resolve returns a copy of o with the carry loaded, defaults filled in and
// paths made absolute.
func (o Options) Resolve() (Options, error) {
	c := o
	if c.Filter != nil && c.FilterName == "" {
		return c, errors.New("overlay: Options.Filter needs a FilterName")
	}
	if c.Filter == nil {
		c.FilterName = ""
	}
	var err error
	if c.Carry == nil {
		if c.Root == "" {
			return c, errors.New("overlay: Options.Carry or Options.Root is required")
		}
		if c.Carry, err = carryset.Load(c.Root); err != nil {
			return c, err
		}
	}
	if err := c.Carry.CheckZipHashes(); err != nil {
		return c, err
	}
	c.Root = c.Carry.Root
	if c.OverlayDir == "" {
		c.OverlayDir = c.Carry.OverlayDir
	}
	if c.OverlayDir, err = filepath.Abs(c.OverlayDir); err != nil {
		return c, err
	}
	if c.GoWorkPath != "" {
		if c.GoWorkPath, err = filepath.Abs(c.GoWorkPath); err != nil {
			return c, err
		}
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c, nil
}

// Run brings OverlayDir (and go.work, if managed) up to date with the carry.
// On any error the previous overlay and go.work are left as they were and no
// temporary directory remains.
func Run(ctx context.Context, opts Options) (*Result, error) {
	o, err := opts.Resolve()
	if err != nil {
		return nil, err
	}
	ins := o.Carry.Modules
	mods := o.Carry.Paths()

	var work *goWorkPlan
	if o.GoWorkPath != "" {
		gv, err := gowork.GoVersion(filepath.Join(o.Root, "go.mod"))
		if err != nil {
			return nil, err
		}
		if work, err = planGoWork(o.GoWorkPath, o.Root, o.OverlayDir, mods, gv); err != nil {
			return nil, err
		}
	}

	res := &Result{OverlayDir: o.OverlayDir}
	upToDate, err := checkExisting(o, ins, res)
	if err != nil {
		return nil, err
	}
	if upToDate {
		res.UpToDate = true
		fmt.Fprintln(o.Progress, "overlay up to date")
	} else {
		if err := build(ctx, o, ins, res); err != nil {
			return nil, err
		}
	}

	if work != nil {
		res.GoWork = work.path
		if work.changed {
			if err := work.file.Write(); err != nil {
				return nil, err
			}
			res.GoWorkChanged = true
			verb := "updated"
			if !work.exists {
				verb = "created"
			}
			fmt.Fprintf(o.Progress, "%s: %s\n", work.path, verb)
		}
	}
	return res, nil
}

// checkExisting compares the current overlay with the inputs. It fails if a
// tree was changed since it was built (unless Force), and reports whether
// every tree is up to date (filling res.Modules if so).
func checkExisting(o Options, ins []*carryset.Carried, res *Result) (bool, error) {
	stamps, err := readStamps(o.OverlayDir)
	if err != nil {
		return false, err
	}
	var edited []error
	for mod, st := range stamps {
		dir := ModuleDir(o.OverlayDir, mod)
		h, err := TreeHash(dir, mod)
		if errors.Is(err, fs.ErrNotExist) {
			h = "(missing)"
		} else if err != nil {
			return false, err
		}
		if h != st.TreeHash {
			edited = append(edited, fmt.Errorf("%s was changed since `carry overlay` built it (tree %s, built as %s)", dir, h, st.TreeHash))
		}
	}
	for _, in := range ins {
		dir := ModuleDir(o.OverlayDir, in.Module)
		if _, ok := stamps[in.Module]; !ok {
			if _, err := os.Lstat(dir); err == nil {
				edited = append(edited, fmt.Errorf("%s exists but was not built by `carry overlay` (no stamp)", dir))
			}
		}
	}
	if len(edited) > 0 && !o.Force {
		edited = append(edited, errors.New("run `carry refresh` to keep the edits as a patch, or `carry overlay --force` to discard them"))
		return false, errors.Join(edited...)
	}
	if o.Force || len(edited) > 0 || len(stamps) != len(ins) {
		return false, nil
	}
	for _, in := range ins {
		st, ok := stamps[in.Module]
		if !ok || !sameInputs(*st, StampOf(in, o.FilterName)) {
			return false, nil
		}
		res.Modules = append(res.Modules, ModuleResult{
			Module: in.Module, Fork: in.Fork, ZipHash: in.ZipHash, Applied: st.Patches,
			Dir: ModuleDir(o.OverlayDir, in.Module), TreeHash: st.TreeHash,
		})
	}
	return true, nil
}

func sameInputs(a, b Stamp) bool {
	return a.Module == b.Module && a.Fork == b.Fork && a.Version == b.Version && a.ZipHash == b.ZipHash &&
		a.SeriesHash == b.SeriesHash && a.Filter == b.Filter
}

// build creates the whole overlay in a temporary directory next to
// OverlayDir and swaps it in by rename.
func build(ctx context.Context, o Options, ins []*carryset.Carried, res *Result) (err error) {
	tmp, err := atomicfile.TempDirFor(o.OverlayDir)
	if err != nil {
		return fmt.Errorf("creating overlay: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()

	var mods []ModuleResult
	for _, in := range ins {
		m, err := buildModule(ctx, o, tmp, in)
		if err != nil {
			return err
		}
		m.Dir = ModuleDir(o.OverlayDir, in.Module)
		mods = append(mods, *m)
	}
	if err := atomicfile.ReplaceDir(tmp, o.OverlayDir); err != nil {
		return fmt.Errorf("installing the overlay: %w", err)
	}
	res.Modules = mods
	return nil
}

func buildModule(ctx context.Context, o Options, tmp string, in *carryset.Carried) (*ModuleResult, error) {
	dir := ModuleDir(tmp, in.Module)
	applied, err := BuildTree(ctx, o.Root, in, dir, in.Series.Patches, o.Filter)
	if err != nil {
		return nil, err
	}
	h, err := TreeHash(dir, in.Module)
	if err != nil {
		return nil, err
	}
	st := StampOf(in, o.FilterName)
	st.Patches = applied
	st.TreeHash = h
	if err := WriteStamp(tmp, &st); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Progress, "%s: verified %s, applied %d patches\n", in.Module, in.ZipHash, len(applied))
	return &ModuleResult{Module: in.Module, Fork: in.Fork, ZipHash: in.ZipHash, Applied: applied, TreeHash: h, Rebuilt: true}, nil
}

// BuildTree downloads the fork zip of in (running the go command in root),
// verifies it against in.ZipHash, extracts it into dir (which must not
// exist) and applies patches in order, keeping only files accepted by
// filter if it is not nil. It returns the patches that changed something.
// Errors name the module, the fork version and, for patches, the patch
// file, target file and hunk.
func BuildTree(ctx context.Context, root string, in *carryset.Carried, dir string, patches []*series.Patch, filter func(string) bool) ([]string, error) {
	where := fmt.Sprintf("%s (%s@%s)", in.Module, in.Fork.Path, in.Fork.Version)
	d, err := modcache.FetchVerified(ctx, root, in.Fork, in.ZipHash)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if err := modcache.Extract(dir, in.Fork, d.Zip); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	var applied []string
	for _, p := range patches {
		n, err := p.Apply(dir, filter)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if n > 0 {
			applied = append(applied, p.Name)
		}
	}
	return applied, nil
}
