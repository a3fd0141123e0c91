// Package refresh turns edits made in the overlay back into patch files,
// like `quilt refresh` or `gbp pq export`: edit .overlay/<module>, run
// refresh, and the top patch of that module's series (or a new one) now
// carries the edit.
//
// Patch files are produced by git itself (format-patch of a scratch commit),
// so they are byte-stable and look like every other carry patch.
package refresh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/overlay"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/util/atomicfile"
	"github.com/kcp-carry/kcp-carry/pkg/util/copytree"
	"github.com/kcp-carry/kcp-carry/pkg/util/gitexec"
)

// Options configures Run.
type Options struct {
	// Carry is the carry whose overlay was edited; nil loads the carry of
	// Root.
	Carry *carryset.Carry
	// Root is the repository root.
	Root string
	// Module limits the refresh to one carried module; "" means every
	// module whose overlay tree was edited.
	Module string
	// New, when set, adds a new patch on top of the series instead of
	// folding the edits into the current top patch.
	New *NewPatch
	// Progress receives a line per step; nil discards.
	Progress io.Writer
}

// NewPatch names a patch to append to a series.
type NewPatch struct {
	// Name is the file name, NNNN-name.patch.
	Name string
	// Subject is the commit subject, following the UPSTREAM: convention.
	Subject string
}

// Result lists what Run did per carried module.
type Result struct {
	Modules []ModuleResult `json:"modules"`
}

// ModuleResult is one module's outcome.
type ModuleResult struct {
	Module string `json:"module"`
	// Action is "unchanged", "folded" (edits folded into Patch) or "added"
	// (Patch created and appended to the series).
	Action string `json:"action"`
	Patch  string `json:"patch,omitempty"`
}

// edited is a module whose overlay tree differs from its stamp.
type edited struct {
	in       *carryset.Carried
	stamp    *overlay.Stamp
	dir      string
	treeHash string
}

// Run regenerates patches from edited overlay trees and updates their
// stamps, so that a following `carry overlay` is up to date. Patch files
// are only written once the regenerated series has been checked to
// reproduce the edited tree exactly.
func Run(ctx context.Context, opts Options) (*Result, error) {
	oo, err := overlay.Options{Carry: opts.Carry, Root: opts.Root}.Resolve()
	if err != nil {
		return nil, err
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	if opts.New != nil {
		if err := series.CheckPatchName(opts.New.Name); err != nil {
			return nil, fmt.Errorf("--new: %w", err)
		}
		if err := series.CheckSubject(opts.New.Subject); err != nil {
			return nil, fmt.Errorf("--subject: %w", err)
		}
	}
	ins := oo.Carry.Modules

	res := &Result{}
	var todo []edited
	found := opts.Module == ""
	for _, in := range ins {
		if opts.Module != "" && in.Module != opts.Module {
			continue
		}
		found = true
		e, err := inspect(oo.OverlayDir, in)
		if err != nil {
			return nil, err
		}
		if e == nil {
			res.Modules = append(res.Modules, ModuleResult{Module: in.Module, Action: "unchanged"})
			continue
		}
		todo = append(todo, *e)
	}
	if !found {
		return nil, fmt.Errorf("%s is not carried: no %s", opts.Module, oo.Carry.SeriesFile(opts.Module))
	}
	if opts.New != nil && len(todo) > 1 {
		var names []string
		for _, e := range todo {
			names = append(names, e.in.Module)
		}
		return nil, fmt.Errorf("--new: edits in several modules (%s); choose one with --module", strings.Join(names, ", "))
	}
	if len(todo) == 0 {
		if opts.New != nil {
			return nil, errors.New("--new: no edits in the overlay to put in a new patch")
		}
		fmt.Fprintln(progress, "no edits in the overlay")
	}
	for _, e := range todo {
		m, err := refreshModule(ctx, oo, opts.New, e)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "%s: %s %s\n", m.Module, m.Action, m.Patch)
		res.Modules = append(res.Modules, *m)
	}
	return res, nil
}

// inspect returns the module if its overlay tree was edited since it was
// built from exactly the current inputs, nil if it is unchanged.
func inspect(overlayDir string, in *carryset.Carried) (*edited, error) {
	st, err := overlay.ReadStamp(overlayDir, in.Module)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no overlay built; run `carry overlay` first", in.Module)
	}
	if err != nil {
		return nil, err
	}
	dir := overlay.ModuleDir(overlayDir, in.Module)
	h, err := overlay.TreeHash(dir, in.Module)
	if err != nil {
		return nil, err
	}
	if h == st.TreeHash {
		return nil, nil
	}
	if st.Filter != "" {
		return nil, fmt.Errorf("%s: the overlay was built with filter %q; only a full overlay can be refreshed", dir, st.Filter)
	}
	want := overlay.StampOf(in, "")
	if st.Fork != want.Fork || st.Version != want.Version || st.ZipHash != want.ZipHash || st.SeriesHash != want.SeriesHash {
		return nil, fmt.Errorf("%s was edited, but its pin or series changed since it was built, so the edits cannot be attributed to a patch; save them elsewhere and run `carry overlay --force`", dir)
	}
	return &edited{in: in, stamp: st, dir: dir, treeHash: h}, nil
}

func refreshModule(ctx context.Context, o overlay.Options, np *NewPatch, e edited) (*ModuleResult, error) {
	patches := e.in.Series.Patches
	seriesDir := e.in.Series.Dir
	var (
		base    []*series.Patch
		target  string
		author  gitexec.Ident
		message string
		action  string
	)
	if np != nil {
		target = filepath.Join(seriesDir, np.Name)
		if _, err := os.Lstat(target); err == nil {
			return nil, fmt.Errorf("--new: %s already exists", target)
		}
		author = patchIdent(time.Now())
		if date := os.Getenv("GIT_AUTHOR_DATE"); date != "" {
			author.Date = date // as git commit takes it
		}
		base, message, action = patches, np.Subject, "added"
	} else {
		if len(patches) == 0 {
			return nil, fmt.Errorf("%s: the series is empty, there is no patch to fold the edits into; use --new", e.in.Module)
		}
		top := patches[len(patches)-1]
		h := top.Header
		if h.AuthorDate.IsZero() {
			return nil, fmt.Errorf("%s: no Date: header to keep; fix the patch header or use --new", top.Path)
		}
		base, target = patches[:len(patches)-1], top.Path
		author = patchIdent(h.AuthorDate)
		message, action = h.Message(), "folded"
	}

	work, err := os.MkdirTemp("", "carry-refresh-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	data, err := diffAgainstBase(ctx, o, e, base, filepath.Join(work, "git"), author, message)
	if err != nil {
		return nil, err
	}
	// The carry's patches name no person: carry export sets the submitter.
	if data, err = series.RemoveAuthor(data); err != nil {
		return nil, fmt.Errorf("git produced an unusable patch: %w", err)
	}
	patch, err := series.ParsePatch(target, data)
	if err != nil {
		return nil, fmt.Errorf("git produced an unusable patch: %w", err)
	}
	patch.Name = filepath.Base(target)

	// Check the new series rebuilds the edited tree before writing anything.
	check := filepath.Join(work, "check")
	if _, err := overlay.BuildTree(ctx, o.Root, e.in, check, append(append([]*series.Patch(nil), base...), patch), nil); err != nil {
		return nil, fmt.Errorf("regenerated patch does not apply: %w", err)
	}
	h, err := overlay.TreeHash(check, e.in.Module)
	if err != nil {
		return nil, err
	}
	if h != e.treeHash {
		return nil, fmt.Errorf("%s: regenerated series yields tree %s, not the edited %s (edits git cannot record, such as symlinks?)", e.in.Module, h, e.treeHash)
	}

	if err := atomicfile.Write(target, data, 0o644); err != nil {
		return nil, err
	}
	if np != nil {
		if err := appendToSeries(seriesDir, np.Name); err != nil {
			return nil, err
		}
	}
	s, err := series.Load(seriesDir)
	if err != nil {
		return nil, err
	}
	st := *e.stamp
	st.SeriesHash = s.Hash
	st.TreeHash = e.treeHash
	if np != nil {
		st.Patches = append(st.Patches, np.Name)
	}
	if err := overlay.WriteStamp(o.OverlayDir, &st); err != nil {
		return nil, err
	}
	return &ModuleResult{Module: e.in.Module, Action: action, Patch: target}, nil
}

// diffAgainstBase commits base (the pristine zip plus the base patches) and
// then the edited overlay tree in a scratch repository, and formats the
// second commit as a patch.
func diffAgainstBase(ctx context.Context, o overlay.Options, e edited, base []*series.Patch, repoDir string, author gitexec.Ident, message string) ([]byte, error) {
	if _, err := overlay.BuildTree(ctx, o.Root, e.in, repoDir, base, nil); err != nil {
		return nil, fmt.Errorf("rebuilding the base of the refreshed patch: %w", err)
	}
	g := &gitRepo{gitexec.Repo{Dir: repoDir}}
	if err := g.init(ctx); err != nil {
		return nil, err
	}
	if err := g.commitAll(ctx, baseIdent(), "base"); err != nil {
		return nil, err
	}
	if err := replaceTree(repoDir, e.dir); err != nil {
		return nil, err
	}
	changed, err := g.changed(ctx)
	if err != nil {
		return nil, err
	}
	if !changed {
		return nil, fmt.Errorf("%s: the edited tree equals the series without its top patch; remove that patch from the series instead", e.dir)
	}
	if err := g.commitAll(ctx, author, message); err != nil {
		return nil, err
	}
	return g.formatPatch(ctx)
}

// replaceTree makes dst (a git work tree) hold exactly the files of src.
func replaceTree(dst, src string) error {
	entries, err := os.ReadDir(dst)
	if err != nil {
		return err
	}
	for _, ent := range entries {
		if ent.Name() == ".git" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dst, ent.Name())); err != nil {
			return err
		}
	}
	err = copytree.Copy(src, dst, copytree.Options{
		Writable: true,
		Skip: func(rel string) (bool, error) {
			if rel == ".git" {
				return false, fmt.Errorf("%s: a .git directory inside a module tree is not supported", filepath.Join(src, rel))
			}
			return false, nil
		},
	})
	var unsupported *copytree.UnsupportedError
	if errors.As(err, &unsupported) {
		return fmt.Errorf("%s: only regular files can be carried in a patch (found %s)", unsupported.Path, unsupported.Type)
	}
	return err
}

// appendToSeries adds name as the last entry of dir/series.
func appendToSeries(dir, name string) error {
	path := filepath.Join(dir, series.FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	data = append(data, name+"\n"...)
	return atomicfile.Write(path, data, 0o644)
}
