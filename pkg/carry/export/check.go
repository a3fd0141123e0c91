package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/kcp-carry/kcp-carry/pkg/carry/overlay"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
)

// checkExported reads the n-th of total exported patches and checks it
// against its source carry patch: the subject follows the UPSTREAM:
// convention after [PATCH n/total] (series.ParsePatch), author, date,
// subject and body are the source's, and it changes the same files as the
// source, each moved into dir.
func checkExported(src *series.Patch, outPath string, n, total int, dir string) (*series.Patch, error) {
	data, err := os.ReadFile(outPath)
	if err != nil {
		return nil, err
	}
	out, err := series.ParsePatch(outPath, data)
	if err != nil {
		return nil, fmt.Errorf("exported from %s: %w", src.Path, err)
	}
	if got, want := strings.TrimSpace(out.Header.SubjectPrefix), fmt.Sprintf("[PATCH %d/%d]", n, total); got != want {
		return nil, fmt.Errorf("%s (from %s): subject prefix %q, want %q", outPath, src.Path, got, want)
	}
	if err := sameHeader(src.Header, out.Header); err != nil {
		return nil, fmt.Errorf("%s does not carry the header of %s: %w", outPath, src.Path, err)
	}
	if err := checkPaths(src.Files, out.Files, dir); err != nil {
		return nil, fmt.Errorf("%s (from %s): %w", outPath, src.Path, err)
	}
	return out, nil
}

// sameHeader compares what git am and format-patch must carry over.
func sameHeader(want, got *gitdiff.PatchHeader) error {
	ident := func(p *gitdiff.PatchIdentity) string {
		if p == nil {
			return "(none)"
		}
		return p.String()
	}
	switch {
	case ident(want.Author) != ident(got.Author):
		return fmt.Errorf("author %s, want %s", ident(got.Author), ident(want.Author))
	case !want.AuthorDate.Equal(got.AuthorDate):
		return fmt.Errorf("date %s, want %s", got.AuthorDate.Format(time.RFC1123Z), want.AuthorDate.Format(time.RFC1123Z))
	case want.Title != got.Title:
		return fmt.Errorf("subject %q, want %q", got.Title, want.Title)
	case strings.TrimSpace(want.Body) != strings.TrimSpace(got.Body):
		return fmt.Errorf("the message body differs:\n%s\nwant:\n%s", got.Body, want.Body)
	}
	return nil
}

// checkPaths checks that the exported file diffs out are the module-relative
// diffs src moved into dir: every old and new name lies under dir, and with
// dir stripped they change the same paths (copies may come out as new
// files, which changes no path).
func checkPaths(src, out []*gitdiff.File, dir string) error {
	prefix := dirPrefix(dir)
	var stripped []*gitdiff.File
	for _, f := range out {
		g := *f
		for _, name := range []*string{&g.OldName, &g.NewName} {
			if *name == "" {
				continue
			}
			rel, ok := strings.CutPrefix(*name, prefix)
			if !ok {
				return fmt.Errorf("path %s is not in the module's fork directory %s", *name, dirOrRoot(dir))
			}
			*name = rel
		}
		stripped = append(stripped, &g)
	}
	if want, got := changedPaths(src), changedPaths(stripped); !slices.Equal(want, got) {
		return fmt.Errorf("changes %s under %s, but the carry patch changes %s", strings.Join(got, ", "), dirOrRoot(dir), strings.Join(want, ", "))
	}
	return nil
}

// changedPaths lists the paths whose content a patch changes, sorted: the
// new name of created, modified and copied files, the old name of deleted
// files, and both names of renamed files.
func changedPaths(files []*gitdiff.File) []string {
	var paths []string
	for _, f := range files {
		switch {
		case f.IsDelete:
			paths = append(paths, f.OldName)
		case f.IsRename:
			paths = append(paths, f.OldName, f.NewName)
		default:
			paths = append(paths, f.NewName)
		}
	}
	sort.Strings(paths)
	return slices.Compact(paths)
}

// checkRoundTrip applies the written patch files, as they are, to the
// pristine base of g and compares each module's tree with the one
// overlay.BuildTree makes from the same verified zip and the carry (go-gitdiff
// applying the module-relative patches): the exported series must
// reproduce exactly what `carry overlay` builds and the tests ran against.
func checkRoundTrip(ctx context.Context, root string, g *gitRepo, mods []*carried, files []string) error {
	if _, err := g.Run(ctx, "checkout", "-q", "--detach", "base"); err != nil {
		return err
	}
	for _, f := range files {
		if err := g.am(ctx, f, ""); err != nil {
			return fmt.Errorf("the exported %s does not apply to the pristine fork: %w", filepath.Base(f), err)
		}
	}
	scratch := filepath.Join(filepath.Dir(g.Dir), "overlay")
	for i, m := range mods {
		want := filepath.Join(scratch, fmt.Sprint(i))
		if _, err := overlay.BuildTree(ctx, root, m.in, want, m.in.Series.Patches, nil); err != nil {
			return err
		}
		var others []string
		for _, o := range mods {
			if o != m {
				others = append(others, o.loc.Dir)
			}
		}
		got := filepath.Join(g.Dir, filepath.FromSlash(m.loc.Dir))
		if diffs, err := CompareTrees(got, want, otherModules(m.loc.Dir, others)); err != nil {
			return err
		} else if len(diffs) > 0 {
			return fmt.Errorf("%s: the exported series does not reproduce the overlay tree: %s", m.in.Module, summarize(diffs))
		}
	}
	return nil
}

// otherModules returns the directories, relative to dir, of the other
// modules' trees nested in it (and .git at the repository root), which
// are not part of dir's module.
func otherModules(dir string, others []string) []string {
	var skip []string
	if dir == "" {
		skip = append(skip, ".git")
	}
	for _, o := range others {
		if rel, ok := strings.CutPrefix(o, dirPrefix(dir)); ok && rel != "" {
			skip = append(skip, rel)
		}
	}
	return skip
}

func summarize(diffs []string) string {
	const max = 10
	if len(diffs) > max {
		return strings.Join(diffs[:max], "; ") + fmt.Sprintf("; and %d more", len(diffs)-max)
	}
	return strings.Join(diffs, "; ")
}

// CompareTrees compares the regular files of two directory trees (content
// and executable bit), leaving out the slash-separated relative paths in
// skip of a, and returns the differences, sorted: "only in A: p",
// "only in B: p" or "differs: p".
func CompareTrees(a, b string, skip []string) ([]string, error) {
	fa, err := TreeFiles(a, skip)
	if err != nil {
		return nil, err
	}
	fb, err := TreeFiles(b, nil)
	if err != nil {
		return nil, err
	}
	var diffs []string
	for p, h := range fa {
		switch hb, ok := fb[p]; {
		case !ok:
			diffs = append(diffs, "only in "+a+": "+p)
		case hb != h:
			diffs = append(diffs, "differs: "+p)
		}
	}
	for p := range fb {
		if _, ok := fa[p]; !ok {
			diffs = append(diffs, "only in "+b+": "+p)
		}
	}
	sort.Strings(diffs)
	return diffs, nil
}

// TreeFiles maps every file under dir (slash-separated relative path) to
// its kind and content hash: "x" for executable files, "-" for other
// regular files, "l" for symbolic links (hashing the target). Directories
// in skip (relative, slash-separated) are left out.
func TreeFiles(dir string, skip []string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if slices.Contains(skip, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		var kind string
		var data []byte
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			kind, data = "l", []byte(target)
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			kind = "-"
			if fi.Mode().Perm()&0o111 != 0 {
				kind = "x"
			}
			if data, err = os.ReadFile(p); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a regular file or symbolic link", p)
		}
		sum := sha256.Sum256(data)
		files[rel] = kind + hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	return files, nil
}
