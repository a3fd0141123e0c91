// Package kcppatches is the carry's companion change for kcp itself:
// kcp-patches/ holds one directory per kcp pull request, named
// <n>-<name> with n its merge order (0-bump-k8s-script, 1-pin-bump, 2-...),
// each a series of git format-patch files against kcp's repository in the
// layout of staging-patches/, cut on kcp main. A pull request whose change is
// what kcp's own script makes (a pin bump: hack/bump-k8s.sh's go.mod and
// go.sum) has a series that lists no patch, and its place in the order. A pull request whose patches do not
// apply to a release branch has a backport form there, in a subdirectory
// named for the branch (3-.../release-0.32/). ApplyToCopy applies them, pull
// request after pull request, with git am to a scratch copy of a kcp source
// tree, as a kcp maintainer would, leaving the tree itself untouched.
package kcppatches

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/util/copytree"
	"github.com/kcp-carry/kcp-carry/pkg/util/gitexec"
)

// Dir is the pull requests' directory under the repository root.
const Dir = "kcp-patches"

// PR is one kcp pull request: the series in kcp-patches/<Name>.
type PR struct {
	// Name is the directory's name, <Order>-<what> (1-pin-bump); Order
	// counts from 0.
	Name   string
	Order  int
	Series *series.Series
	// Backports are its forms for release branches, by branch name.
	Backports []Backport
}

// CarriedForm is the form of pr (main's or a backport's) that the kcp tree
// dir already carries (series.AppliedIn), or nil when it carries none.
func (pr *PR) CarriedForm(ctx context.Context, dir string) (*series.Series, error) {
	for _, form := range pr.Forms() {
		ok, err := form.AppliedIn(ctx, dir)
		if err != nil || ok {
			return form, err
		}
	}
	return nil, nil
}

// Backport is a pull request's form for a kcp release branch the main form
// does not apply to: kcp-patches/<pull request>/<Branch>/.
type Backport struct {
	Branch string // release-0.32
	Series *series.Series
}

// Forms are the pull request's series: the main one first, then its
// backports'.
func (pr *PR) Forms() []*series.Series {
	forms := []*series.Series{pr.Series}
	for _, b := range pr.Backports {
		forms = append(forms, b.Series)
	}
	return forms
}

var (
	// prName is a pull request directory's name: its merge order (0, 1,
	// ..., without leading zeros), then words.
	prName = regexp.MustCompile(`^(0|[1-9][0-9]*)-[a-z0-9]+(-[a-z0-9]+)*$`)
	// backportName is a backport directory's name: kcp's release branch.
	backportName = regexp.MustCompile(`^release-[0-9]+\.[0-9]+$`)
)

// Load reads every pull request of root/kcp-patches, in merge order, each
// series checked with CheckSubject. Anything else in kcp-patches/, two pull
// requests with one number, or none is an error naming it.
func Load(root string) ([]*PR, error) {
	dir := filepath.Join(root, Dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var prs []*PR
	var errs []error
	byOrder := map[int]string{}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		m := prName.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			errs = append(errs, fmt.Errorf("%s: want only pull request directories named <merge order>-<name> (1-pin-bump) in %s", path, dir))
			continue
		}
		order, err := strconv.Atoi(m[1])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			continue
		}
		if other, dup := byOrder[order]; dup {
			errs = append(errs, fmt.Errorf("%s and %s: two pull requests numbered %d; the number is the merge order", filepath.Join(dir, other), path, order))
			continue
		}
		byOrder[order] = e.Name()
		pr, err := LoadPR(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pr.Order = order
		prs = append(prs, pr)
	}
	if len(prs) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s: no pull request directories (<merge order>-<name>/series)", dir))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(prs, func(a, b *PR) int { return a.Order - b.Order })
	return prs, nil
}

// LoadPR reads one pull request directory: its series, checked with
// CheckSubject, and the series of each backport subdirectory. Any other
// subdirectory is an error naming it.
func LoadPR(dir string) (*PR, error) {
	s, err := series.LoadChecked(dir, CheckSubject)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	pr := &PR{Name: filepath.Base(dir), Series: s}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if !backportName.MatchString(e.Name()) {
			errs = append(errs, fmt.Errorf("%s: want only backport directories named for kcp's release branch (release-0.32) in %s", path, dir))
			continue
		}
		b, err := series.LoadChecked(path, CheckSubject)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			continue
		}
		pr.Backports = append(pr.Backports, Backport{Branch: e.Name(), Series: b})
	}
	return pr, errors.Join(errs...)
}

// Names are the patches of prs in the order ApplyToCopy applies them,
// each as <pull request>/<patch>.
func Names(prs []*PR) []string {
	var names []string
	for _, pr := range prs {
		for _, p := range pr.Series.Patches {
			names = append(names, pr.Name+"/"+p.Name)
		}
	}
	return names
}

// CheckSubject refuses the fork's UPSTREAM: subjects: kcp's own commits do
// not use that convention (their subjects read "e2e: ..." or a sentence).
func CheckSubject(subject string) error {
	if strings.HasPrefix(subject, "UPSTREAM:") {
		return fmt.Errorf("subject %q: kcp's commits do not use the fork's UPSTREAM: convention", subject)
	}
	return nil
}

// committer commits the copied tree, and is the author and committer of the
// patches applied to it.
var committer = gitexec.Ident{Name: "carry", Email: "carry@localhost", Date: "@0 +0000"}

// ApplyToCopy replaces dst with a copy of the kcp tree src (without its .git),
// commits it as a scratch repository's first commit and applies the patches
// of prs, in order, with `git am`, one commit each. A pull request whose main
// form does not apply is applied in the first of its backport forms that
// does. An error names the patch and the tree.
func ApplyToCopy(ctx context.Context, src, dst string, prs []*PR) error {
	_, err := ApplyToCopyForms(ctx, src, dst, prs)
	return err
}

// ApplyToCopyForms is ApplyToCopy, and returns the form of each pull request
// it applied, in the order of prs.
func ApplyToCopyForms(ctx context.Context, src, dst string, prs []*PR) ([]*series.Series, error) {
	src, err := filepath.Abs(src)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dst); err != nil {
		return nil, err
	}
	if err := copyTree(src, dst); err != nil {
		return nil, fmt.Errorf("copying kcp tree %s to %s: %w", src, dst, err)
	}
	repo := gitexec.Repo{Dir: dst, Env: committer.Env()}
	for _, args := range [][]string{
		{"-c", "init.defaultBranch=kcp", "init", "-q"},
		{"add", "-A", "-f", "."},
		{"commit", "-q", "--allow-empty", "-m", "kcp tree from " + src},
	} {
		if _, err := repo.Run(ctx, args...); err != nil {
			return nil, fmt.Errorf("committing the copy of kcp tree %s: %w", src, err)
		}
	}
	var forms []*series.Series
	for _, pr := range prs {
		form, err := applyPR(ctx, repo, pr, src)
		if err != nil {
			return nil, err
		}
		forms = append(forms, form)
	}
	return forms, nil
}

// applyPR applies the first form of pr that applies to the copy of the kcp
// tree src, and returns it; it leaves the repository as it was when none
// does.
func applyPR(ctx context.Context, repo gitexec.Repo, pr *PR, src string) (*series.Series, error) {
	head, err := repo.Run(ctx, "rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, form := range pr.Forms() {
		err := amSeries(ctx, repo, form, src)
		if err == nil {
			return form, nil
		}
		errs = append(errs, err)
		_, _ = repo.Run(ctx, "am", "--abort")
		if _, err := repo.Run(ctx, "reset", "-q", "--hard", strings.TrimSpace(string(head))); err != nil {
			return nil, err
		}
	}
	return nil, errors.Join(errs...)
}

// amSeries commits the patches of s with git am, one commit each.
func amSeries(ctx context.Context, repo gitexec.Repo, s *series.Series, src string) error {
	for _, p := range s.Patches {
		// The patches name no author (carry export sets the submitter);
		// git am needs one, so the scratch commits are the committer's.
		data, err := series.SetAuthor(p.Data, committer.Name+" <"+committer.Email+">", "")
		if err != nil {
			return fmt.Errorf("%s: %w", p.Path, err)
		}
		stamped := filepath.Join(repo.Dir, ".git", "carry-am.patch")
		if err := os.WriteFile(stamped, data, 0o644); err != nil {
			return err
		}
		if _, err := repo.Run(ctx, "am", "-q", "--keep-non-patch", "--no-3way", stamped); err != nil {
			return fmt.Errorf("%s does not apply to kcp tree %s (git am): %w", p.Path, src, err)
		}
	}
	return nil
}

// copyTree copies regular files, directories and symlinks of src into dst,
// keeping file modes; a top-level .git is left out, and so is dst when it is
// inside src.
func copyTree(src, dst string) error {
	absDst, err := filepath.Abs(dst)
	if err != nil {
		return err
	}
	return copytree.Copy(src, dst, copytree.Options{
		Symlinks: true,
		Skip: func(rel string) (bool, error) {
			return rel == ".git" || filepath.Join(src, rel) == absDst, nil
		},
	})
}
