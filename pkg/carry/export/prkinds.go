package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/carry/kcppatches"
	"github.com/kcp-carry/kcp-carry/pkg/carry/overlay"
	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/carry/upstreampatches"
	"github.com/kcp-carry/kcp-carry/pkg/carry/verify"
)

// exportState is what the export's loop over the pull requests shares.
type exportState struct {
	o Options
	// tmp receives --out's files, work the stamped patches.
	tmp, work string
	// g is the fork repository the fork's patches are applied in, from the
	// commit the next fork pull request's range starts after (base, then
	// each one's last).
	g          *gitRepo
	repo, base string
	from       string
	all        []*exported
	files      []string
	res        *Result
	ev         *verifyEvidence
	// kcpApplies are the kcp trees each form of kcp-patches/ applied to,
	// kcpEarlier the kcp pull requests written so far (KCPPRResult.Earlier),
	// upstreamBase the Kubernetes modules upstream-patches/ applied to.
	kcpApplies   map[*series.Series][]string
	kcpEarlier   map[string]string
	upstreamBase []string
}

// forkPRKind is a fork pull request: the i-th of src.forkPRs.
type forkPRKind struct {
	src *sources
	i   int
}

// kubePRKind is a Kubernetes pull request: the i-th of src.groups.
type kubePRKind struct {
	src *sources
	i   int
}

// kcpPRKind is a kcp pull request, src.kcp[i], in its form form: the main
// one, or the backport for branch.
type kcpPRKind struct {
	src    *sources
	i      int
	form   *series.Series
	branch string
}

func (k *forkPRKind) write(ctx context.Context, st *exportState, pr *PullRequest) error {
	fp := k.src.forkPRs[k.i]
	for _, e := range fp.patches {
		src, err := stampPatch(e.carried, st.o.Author, st.o.Signoff, filepath.Join(st.work, "stamped", e.mod.in.Module))
		if err != nil {
			return err
		}
		if err := st.g.am(ctx, src.Path, e.mod.loc.Dir); err != nil {
			return fmt.Errorf("%s: patch %s does not apply to %s at %s in %s: %w", e.mod.in.Module, e.carried.Path, st.repo, st.base, dirOrRoot(e.mod.loc.Dir), err)
		}
		head, err := st.g.Run(ctx, "rev-parse", "HEAD")
		if err != nil {
			return err
		}
		e.src, e.commit = src, strings.TrimSpace(string(head))
		st.all = append(st.all, e)
	}
	// Each fork pull request is a series of its own, numbered from 1, in
	// its directory: the fix's at the top of --out.
	to := fp.patches[len(fp.patches)-1].commit
	written, err := st.g.formatPatch(ctx, filepath.Join(st.tmp, fp.dir), st.from+".."+to)
	if err != nil {
		return err
	}
	if len(written) != len(fp.patches) {
		return fmt.Errorf("git format-patch wrote %d patches for the %d of the fork's pull request %s", len(written), len(fp.patches), dirOrRoot(fp.dir))
	}
	for i, e := range fp.patches {
		e.path = written[i]
		if e.out, err = checkExported(e.src, e.path, i+1, len(fp.patches), e.mod.loc.Dir); err != nil {
			return err
		}
		e.res = patchResult(e, st.o.Root)
		e.res.File = path.Join(fp.dir, e.res.File)
	}
	st.files = append(st.files, written...)
	st.from = to
	if k.i == 0 {
		for _, e := range fp.patches {
			st.res.Patches = append(st.res.Patches, e.res)
		}
	} else {
		st.res.ForkPRs = append(st.res.ForkPRs, fp.result())
	}
	return nil
}

func (k *forkPRKind) render(d prData, st *exportState, pr *PullRequest) (prTexts, error) {
	fp := k.src.forkPRs[k.i]
	d.forkPR(fp, st.ev)
	text, err := render(pr.Template, d)
	if err != nil && k.i > 0 {
		return nil, fmt.Errorf("the fork's pull request %s (%s): %w", fp.name, ForkPRsFile, err)
	}
	return prTexts{pr.TextFile(): text}, err
}

// prepare builds every carried module at its fork directory under dst from
// its verified fork zip (as carry overlay does), with the fork's series up
// to pr (or before it, with only its tests), and a go.work that replaces
// the carried modules by them, as carry verify's.
func (k *forkPRKind) prepare(ctx context.Context, env *presubmitEnv, pr *PullRequest, dst string, mode prepareMode) error {
	if mode == wholeSeries {
		return fmt.Errorf("%s: a fork pull request has no e2e check", pr.Name)
	}
	trees := map[string]string{}
	for _, m := range k.src.mods {
		var patches, tests []*series.Patch
		for i, fp := range k.src.forkPRs[:k.i+1] {
			for _, e := range fp.patches {
				switch {
				case e.mod != m:
				case i < k.i || mode == withPR:
					patches = append(patches, e.carried)
				default:
					tests = append(tests, e.carried)
				}
			}
		}
		dir := filepath.Join(dst, filepath.FromSlash(m.loc.Dir))
		if _, err := overlay.BuildTree(ctx, k.src.root, m.in, dir, patches, nil); err != nil {
			return err
		}
		for _, p := range tests {
			if _, err := p.Apply(dir, isTestFile); err != nil {
				return fmt.Errorf("%s: %w", m.in.Module, err)
			}
		}
		trees[m.in.Module] = dir
	}
	return verify.WriteGoWork(filepath.Join(dst, "go.work"), k.src.root, trees)
}

func (k *kubePRKind) last() bool { return k.i == len(k.src.groups)-1 }

func (k *kubePRKind) write(_ context.Context, st *exportState, pr *PullRequest) error {
	up, g := k.src.upstream, k.src.groups[k.i]
	patches, err := writeSeries(st.tmp, pr.Dir, &series.Series{Dir: up.Series.Dir, Patches: g.patches}, st.upstreamBase, st.o.Author, st.o.Signoff)
	if err != nil {
		return err
	}
	r := UpstreamPRResult{Module: g.module, Dir: pr.Dir, PR: pr.TextFile(), Title: patches[len(patches)-1].Subject, Base: st.upstreamBase, Patches: patches}
	if k.last() {
		st.res.Upstream = &r
	} else {
		st.res.UpstreamBefore = append(st.res.UpstreamBefore, r)
	}
	return nil
}

func (k *kubePRKind) render(d prData, st *exportState, pr *PullRequest) (prTexts, error) {
	if k.last() {
		d.Upstream, d.UpstreamBefore = st.res.Upstream, st.res.UpstreamBefore
	} else {
		d.Upstream = &st.res.UpstreamBefore[k.i]
	}
	text, err := render(pr.Template, d)
	if err != nil {
		return nil, fmt.Errorf("the Kubernetes pull request of %s: %w", k.src.groups[k.i].module, err)
	}
	return prTexts{pr.TextFile(): text}, nil
}

// prepare checks out the Kubernetes modules the series is cut on at their
// staging paths (upstreampatches.Checkout) and applies the series up to pr
// with git am, or before it and only pr's tests.
func (k *kubePRKind) prepare(ctx context.Context, _ *presubmitEnv, pr *PullRequest, dst string, mode prepareMode) error {
	if mode == wholeSeries {
		return fmt.Errorf("%s: a Kubernetes pull request has no e2e check", pr.Name)
	}
	up := k.src.upstream
	var upTo []*series.Patch
	for _, g := range k.src.groups[:k.i] {
		upTo = append(upTo, g.patches...)
	}
	own := k.src.groups[k.i].patches
	if mode == withPR {
		upTo = append(upTo, own...)
	}
	s := *up.Series
	s.Patches, s.Hash = upTo, ""
	if _, err := upstreampatches.ApplyToCopy(ctx, &upstreampatches.PR{Dir: up.Dir, Series: &s, Base: up.Base}, dst); err != nil {
		return err
	}
	if mode == withoutPR {
		for _, p := range own {
			if _, err := p.Apply(dst, isTestFile); err != nil {
				return err
			}
		}
	}
	return nil
}

func (k *kcpPRKind) write(_ context.Context, st *exportState, pr *PullRequest) error {
	kp := k.src.kcp[k.i]
	patches, err := writeSeries(st.tmp, pr.Dir, k.form, st.kcpApplies[k.form], st.o.Author, st.o.Signoff)
	if err != nil {
		return err
	}
	if k.branch != "" {
		r := &st.res.KCPPRs[len(st.res.KCPPRs)-1]
		r.Backports = append(r.Backports, KCPBackportResult{Branch: k.branch, Patches: patches})
		return nil
	}
	r := KCPPRResult{Dir: pr.Dir, Name: kp.Name, PR: pr.TextFile(), Earlier: maps.Clone(st.kcpEarlier), Patches: patches}
	name := strings.SplitN(kp.Name, "-", 2)[1]
	st.kcpEarlier[name] = name
	if len(kp.Series.Patches) > 0 {
		st.kcpEarlier[name] = kp.Series.Patches[0].Header.Title
	}
	st.res.KCPPRs = append(st.res.KCPPRs, r)
	return nil
}

func (k *kcpPRKind) render(d prData, st *exportState, pr *PullRequest) (prTexts, error) {
	if k.branch != "" {
		return nil, nil
	}
	i := slices.IndexFunc(st.res.KCPPRs, func(r KCPPRResult) bool { return r.Dir == pr.Dir })
	r := &st.res.KCPPRs[i]
	d.KCP = r
	r.Generic = pr.Template == "generic-kcp-pr.md.tmpl"
	text, err := render(pr.Template, d)
	if err != nil {
		return nil, err
	}
	texts := prTexts{pr.TextFile(): text}
	appendix := "kcp-appendix-" + strings.SplitN(r.Name, "-", 2)[1] + ".md.tmpl"
	if _, err := fs.Stat(templates, appendix); errors.Is(err, fs.ErrNotExist) {
		return texts, nil
	}
	if text, err = render(appendix, d); err != nil {
		return nil, err
	}
	// An appendix with nothing to say (its figures not measured yet) is
	// not written.
	if len(bytes.TrimSpace(text)) > 0 {
		r.Appendix = r.Dir + "/" + AppendixFile
		texts[r.Appendix] = text
	}
	return texts, nil
}

// errNoTree is a presubmit that cannot run here: no kcp tree was given for
// the pull request's base.
var errNoTree = errors.New("no kcp tree given")

// tree is the kcp tree the pull request's form applies to: kcp main's for
// the main form, the release's for a backport.
func (k *kcpPRKind) tree(env *presubmitEnv) (string, string, error) {
	if k.branch != "" {
		if env.kcpReleaseSource == "" {
			return "", "", fmt.Errorf("%w: --kcp-release-source (a %s tree) for %s", errNoTree, k.branch, k.src.kcp[k.i].Name+"/"+k.branch)
		}
		return env.kcpReleaseSource, "--kcp-release-source", nil
	}
	if env.kcpSource == "" {
		return "", "", fmt.Errorf("%w: --kcp-source (a kcp main tree) for %s", errNoTree, k.src.kcp[k.i].Name)
	}
	return env.kcpSource, "--kcp-source", nil
}

// prepare copies the kcp tree of pr's base and applies kcp-patches/ with
// git am up to pr (kcppatches.ApplyToCopyForms, each pull request in the
// first form that applies, which for pr must be pr's own), or before pr and
// only pr's tests; or, for the e2e checks, every pull request of the series
// and the carried modules replaced by the overlay's trees, as kcp's pin bump
// with the carry merged would have them.
func (k *kcpPRKind) prepare(ctx context.Context, env *presubmitEnv, pr *PullRequest, dst string, mode prepareMode) error {
	src, flag, err := k.tree(env)
	if err != nil {
		return err
	}
	prs := k.src.kcp[:k.i+1]
	switch mode {
	case withoutPR:
		prs = k.src.kcp[:k.i]
	case wholeSeries:
		prs = k.src.kcp
	}
	forms, err := kcppatches.ApplyToCopyForms(ctx, src, dst, prs)
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, src, err)
	}
	if mode != withoutPR && forms[k.i] != k.form {
		return fmt.Errorf("%s %s: %s applies in another of its forms (%s), not this one", flag, src, k.src.kcp[k.i].Name, forms[k.i].Dir)
	}
	switch mode {
	case withoutPR:
		for _, p := range k.form.Patches {
			if _, err := p.Apply(dst, isTestFile); err != nil {
				return err
			}
		}
	case wholeSeries:
		return replaceWithOverlay(ctx, env, dst)
	}
	return nil
}

// replaceWithOverlay points the carried modules of the kcp tree dst at the
// overlay's trees (`go mod edit -replace`, as hack/kcp-race-target.sh does).
func replaceWithOverlay(ctx context.Context, env *presubmitEnv, dst string) error {
	for _, in := range env.carry.Modules {
		dir := overlay.ModuleDir(env.carry.OverlayDir, in.Module)
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
			return fmt.Errorf("%s: no overlay of %s: run carry overlay (make overlay) first: %w", env.carry.OverlayDir, in.Module, err)
		}
		cmd := exec.CommandContext(ctx, "go", "mod", "edit", "-replace="+in.Module+"="+dir)
		cmd.Dir, cmd.Env = dst, append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go mod edit -replace=%s=%s in %s: %v\n%s", in.Module, dir, dst, err, out)
		}
	}
	return nil
}
