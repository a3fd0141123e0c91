package export

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/modcache"
	"github.com/kcp-carry/kcp-carry/pkg/carry/overlay"
	"github.com/kcp-carry/kcp-carry/pkg/util/gitexec"
)

// git runs git in dir, isolated from the user's configuration, with a fixed
// identity, and returns stdout.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitErr(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func gitErr(dir string, args ...string) (string, error) {
	g := newGitRepo(dir)
	out, err := g.Run(context.Background(), args...)
	return string(out), err
}

// patchedTrees is the independent check of an exported series: a new
// throwaway repository holding the pristine fork modules (the go.sum
// verified zips, through modcache) at dirs (module path -> fork directory),
// the exported patches applied with plain `git am` (no --directory: their
// paths are already fork paths), and each module's files read back. A
// patch that does not apply is returned as an error.
func patchedTrees(t *testing.T, root string, dirs map[string]string, patches []string) (map[string]map[string]string, error) {
	t.Helper()
	c, err := carryset.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	ins := c.Modules
	repo := filepath.Join(t.TempDir(), "fork")
	// Outer directories first: a module zip excludes nested modules.
	sort.Slice(ins, func(i, j int) bool { return dirs[ins[i].Module] < dirs[ins[j].Module] })
	for _, in := range ins {
		dir, ok := dirs[in.Module]
		if !ok {
			t.Fatalf("no fork directory given for %s", in.Module)
		}
		d, err := modcache.FetchVerified(context.Background(), root, in.Fork, in.ZipHash)
		if err != nil {
			t.Fatal(err)
		}
		if err := modcache.Extract(filepath.Join(repo, filepath.FromSlash(dir)), in.Fork, d.Zip); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "init", "-q")
	git(t, repo, "add", "-A", "-f", ".")
	git(t, repo, "commit", "-q", "-m", "pristine")
	if _, err := gitErr(repo, append([]string{"am", "-q"}, patches...)...); err != nil {
		return nil, err
	}
	trees := map[string]map[string]string{}
	for _, in := range ins {
		var skip []string
		for mod, d := range dirs {
			if rel, ok := strings.CutPrefix(d, dirPrefix(dirs[in.Module])); ok && mod != in.Module && rel != "" {
				skip = append(skip, rel)
			}
		}
		if dirs[in.Module] == "" {
			skip = append(skip, ".git")
		}
		files, err := TreeFiles(filepath.Join(repo, filepath.FromSlash(dirs[in.Module])), skip)
		if err != nil {
			t.Fatal(err)
		}
		trees[in.Module] = files
	}
	return trees, nil
}

// submitter is the person who runs the export in the tests, and testBranch
// the fork branch they target.
var submitter = Identity{Name: "A U Thor", Email: "author@example.com"}

const testBranch = "kcp-1.36.0"

// overlayTrees builds the overlay of root with overlay.Run into a scratch
// directory (leaving the repository's .overlay and go.work alone) and reads
// each module's files.
func overlayTrees(t *testing.T, root string) map[string]map[string]string {
	t.Helper()
	res, err := overlay.Run(context.Background(), overlay.Options{Root: root, OverlayDir: filepath.Join(t.TempDir(), "overlay")})
	if err != nil {
		t.Fatal(err)
	}
	trees := map[string]map[string]string{}
	for _, m := range res.Modules {
		files, err := TreeFiles(m.Dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		trees[m.Module] = files
	}
	return trees
}

// exportedPatches lists the numbered patch files of an export, in order.
func exportedPatches(t *testing.T, dir string) []string {
	t.Helper()
	patches, err := filepath.Glob(filepath.Join(dir, "[0-9][0-9][0-9][0-9]-*.patch"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(patches)
	return patches
}

// exportedContains reads the exported file out/file, reports each of wants
// it lacks, and returns it.
func exportedContains(t *testing.T, out, file string, wants ...string) string {
	t.Helper()
	text := testfs.Read(t, filepath.Join(out, file))
	testfs.ContainsAll(t, file, text, wants...)
	return text
}

// forkSeries are the files of every fork pull request res wrote to out, in
// merge order: the fix's, then the later ones'.
func forkSeries(out string, res *Result) []string {
	var files []string
	for _, p := range res.Patches {
		files = append(files, filepath.Join(out, filepath.FromSlash(p.File)))
	}
	for _, pr := range res.ForkPRs {
		for _, p := range pr.Patches {
			files = append(files, filepath.Join(out, filepath.FromSlash(p.File)))
		}
	}
	return files
}

// compareWithOverlay fails the test unless the fork pull requests res
// wrote to out, applied in merge order to the pristine fork, give the trees
// overlay.Run builds.
func compareWithOverlay(t *testing.T, root, out string, res *Result, dirs map[string]string) {
	t.Helper()
	got, err := patchedTrees(t, root, dirs, forkSeries(out, res))
	if err != nil {
		t.Fatalf("the exported series does not apply to the pristine fork: %v", err)
	}
	want := overlayTrees(t, root)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("module trees after git am of the export differ from the overlay (-overlay +export):\n%s", diff)
	}
}

// commitPatch commits the work tree of the git repository dir with the
// given author, date and message and returns it as a module-relative
// format-patch file, as the carry keeps them.
func commitPatch(t *testing.T, dir, message string) string {
	t.Helper()
	msg := filepath.Join(t.TempDir(), "msg")
	testfs.Write(t, msg, message)
	git(t, dir, "add", "-A", ".")
	author := gitexec.Repo{Dir: dir, Env: []string{
		"GIT_AUTHOR_NAME=Carry Tester", "GIT_AUTHOR_EMAIL=tester@example.com", "GIT_AUTHOR_DATE=@1767225600 +0100",
		"GIT_COMMITTER_NAME=c", "GIT_COMMITTER_EMAIL=c@example.com",
	}}
	if _, err := author.Run(context.Background(), "commit", "-q", "-F", msg); err != nil {
		t.Fatal(err)
	}
	return git(t, dir, "format-patch", "-1", "--stdout", "--zero-commit", "--no-signature", "-M", "HEAD")
}
