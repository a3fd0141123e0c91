package export

import (
	"context"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/util/gitexec"
)

// gitRepo is the throwaway fork repository the carry is applied and
// exported in; gitexec isolates it so that the exported files depend only on
// the trees and the patches.
type gitRepo struct {
	gitexec.Repo
}

// committer commits the base tree and is git am's committer. Neither
// appears in format-patch output, which shows only the author.
var committer = gitexec.Ident{Name: "carry", Email: "carry@localhost", Date: "@0 +0000"}

func newGitRepo(dir string) *gitRepo {
	return &gitRepo{gitexec.Repo{Dir: dir, Env: committer.Env()}}
}

// initBase makes the files already in the directory the repository's first
// commit (ignored files too: a module's .gitignore must not hide files of
// the pristine tree) and tags it base.
func (g *gitRepo) initBase(ctx context.Context) error {
	steps := [][]string{
		{"-c", "init.defaultBranch=export", "init", "-q"},
		{"add", "-A", "-f", "."},
		{"commit", "-q", "--allow-empty", "-m", "pristine fork modules"},
		{"tag", "base"},
	}
	for _, args := range steps {
		if _, err := g.Run(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// am applies one patch file as a commit. dir, if not empty, is prepended to
// every path in the patch (git apply --directory). --keep-non-patch strips
// only the [PATCH] prefix from the subject, so a subject is kept as written.
func (g *gitRepo) am(ctx context.Context, patch, dir string) error {
	args := []string{"am", "-q", "--keep-non-patch", "--no-3way"}
	if dir != "" {
		args = append(args, "--directory="+dir)
	}
	_, err := g.Run(ctx, append(args, patch)...)
	return err
}

// FormatPatchArgs are the options of the git format-patch runs that write
// the exported series, one per fork pull request (followed by -o DIR
// from..to):
//
//   - --numbered: [PATCH n/m] subjects, n/m across the pull request's
//     patches of all carried modules;
//   - --zero-commit --no-signature: no commit hashes of the throwaway
//     repository and no git version, so the output is reproducible;
//   - --full-index: full blob names on index lines; the pristine blobs are
//     the fork's own, so `git am -3` in a fork checkout can fall back to
//     them;
//   - -M: rename detection, as git's default diff.renames does;
//   - --stat=1000 --stat-graph-width=40 --summary: the diffstat names every
//     file by its full fork path (git would shorten long paths to .../name
//     to fit 80 columns), the graph stays as wide as on a terminal, and the
//     create/delete/rename summary stays (an explicit --stat drops it);
//   - --src-prefix/--dst-prefix: the standard a/ b/ whatever the
//     configuration.
var FormatPatchArgs = []string{
	"format-patch", "--numbered", "--zero-commit", "--no-signature", "--full-index", "-M",
	"--stat=1000", "--stat-graph-width=40", "--summary",
	"--src-prefix=a/", "--dst-prefix=b/", "--no-cover-letter", "--no-thread",
}

// formatPatch writes the commits of revs (from..to) as numbered patch files
// into out and returns their paths in order.
func (g *gitRepo) formatPatch(ctx context.Context, out, revs string) ([]string, error) {
	args := append(append([]string(nil), FormatPatchArgs...), "-o", out, revs)
	stdout, err := g.Run(ctx, args...)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, line := range strings.Split(string(stdout), "\n") {
		if line != "" {
			files = append(files, line)
		}
	}
	return files, nil
}
