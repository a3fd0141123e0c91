package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/export"
)

// exportLong is carry export's help: what it runs, and for how long.
const exportLong = `Writes to --out the fork's pull request (the series as git format-patch files with
fork paths, by --author, signed off with --signoff, and PR.md), the draft of the issue it leaves open,
a comment for kcp-dev/kcp#4551 with the mitigation (--watch-cache=false) and its measured cost,
the fork's later pull requests that staging-patches/pull-requests splits off (kcp-dev-kubernetes-<name>/),
one directory per kcp pull request of kcp-patches/ (its patches and PR.md), in merge order, and the
pull request for kubernetes/kubernetes of upstream-patches/kubernetes (kubernetes-kubernetes/). kcp's
texts link the fork's pull request once --fork-pr gives its number, and the pin bump pins the fork
commit --fork-version names (--fork-version-includes: and says what the later ones it holds bring).

Before writing, it applies the series to the pristine fork and checks that it reproduces the overlay
(seconds), applies kcp-patches/ with git am to a copy of each --kcp-source tree and upstream-patches/
to the upstream modules it is cut on (from the module proxy), and runs carry verify:
two go test -race runs of the carry's packages per patch (the series up to it, and before it with only
its tests): minutes, and over an hour on a 2-core machine busy with other builds. --verify-report FILE
quotes a saved carry verify --json report instead; --no-verify skips it, and PR.md then quotes no test
run. --presubmit-report FILE reads a carry presubmit --json report and refuses a pull request
whose presubmit is red there, unless --allow-red (its text then says so).`

// ExportOptions are carry export's flags.
type ExportOptions struct {
	commonOptions
	out, verifyReport               string
	author, baseBranch, forkVersion string
	// forkPR is --fork-pr as given (forkPRNumber reads it).
	forkPR                   string
	force, noVerify, signoff bool
	presubmitReport          string
	allowRed                 bool
	kcpTrees                 []string
	forkVersionIncludes      []string
}

func NewExportOptions() *ExportOptions { return &ExportOptions{} }

func (o *ExportOptions) AddFlags(fs *pflag.FlagSet) {
	o.commonOptions.AddFlags(fs)
	fs.StringVar(&o.out, "out", "", "directory for the fork's patch series and PR.md, its later pull requests (kcp-dev-kubernetes-<name>/), kcp-dev-kcp/ and kubernetes-kubernetes/ (must not exist or be empty, unless --force)")
	fs.BoolVar(&o.force, "force", false, "replace a non-empty --out directory")
	fs.StringVar(&o.verifyReport, "verify-report", "", "quote `FILE`, a carry verify --json report of this carry, instead of running carry verify")
	fs.BoolVar(&o.noVerify, "no-verify", false, "do not run carry verify; PR.md then quotes no test run")
	fs.StringVar(&o.author, "author", "", "the person submitting the pull requests, as \"Name <email>\": every patch's author (default: git config user.name and user.email)")
	fs.BoolVar(&o.signoff, "signoff", false, "add the author's Signed-off-by (kcp's DCO) to every patch: only the person submitting may certify it")
	fs.StringVar(&o.baseBranch, "base-branch", "", "the fork branch the pull request targets: the rebase branch holding the pinned commit, kcp-<kubernetes version> (required; docs/upstream.md)")
	fs.StringVar(&o.forkVersion, "fork-version", "", "the fork's pseudo-version with the patches merged, for kcp's pin bump (empty until the fork merged them)")
	fs.StringVar(&o.forkPR, "fork-pr", "", "the number `N` of the fork's pull request, which kcp's texts link as kcp-dev/kubernetes#N (empty until it is opened: they say it comes first)")
	fs.StringArrayVar(&o.forkVersionIncludes, "fork-version-includes", nil, "the fork's later pull request `NAME` (staging-patches/pull-requests: detector) that --fork-version holds too; the pin bump's text then says what it brings kcp (repeatable)")
	fs.StringVar(&o.presubmitReport, "presubmit-report", "", "`FILE`, a carry presubmit --json report: a pull request whose presubmit is red there is refused (without it, no presubmit is checked)")
	fs.BoolVar(&o.allowRed, "allow-red", false, "export a pull request whose presubmit is red in --presubmit-report; its text then says so, naming the check")
	fs.StringArrayVar(&o.kcpTrees, "kcp-source", nil, "kcp source tree that ROOT/kcp-patches must apply to with git am, checked on a scratch copy (repeatable)")
}

func (o *ExportOptions) Validate() error {
	if o.out == "" {
		return errors.New("--out DIR is required")
	}
	if o.baseBranch == "" {
		return errors.New("--base-branch BRANCH is required: the fork's rebase branch that holds the pinned commit (docs/upstream.md)")
	}
	if o.allowRed && o.presubmitReport == "" {
		return errors.New("--allow-red: give --presubmit-report FILE, the report whose red presubmits it lets through")
	}
	if o.noVerify && o.verifyReport != "" {
		return errors.New("--verify-report and --no-verify exclude each other")
	}
	if len(o.forkVersionIncludes) > 0 && o.forkVersion == "" {
		return fmt.Errorf("--fork-version-includes %s: give --fork-version too, the fork version that holds it", o.forkVersionIncludes[0])
	}
	_, err := o.forkPRNumber()
	return err
}

// forkPRNumber is --fork-pr's number, 0 without it.
func (o *ExportOptions) forkPRNumber() (int, error) {
	if o.forkPR == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(o.forkPR)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("--fork-pr %q: want the number of the fork's pull request (kcp-dev/kubernetes#N), a positive integer", o.forkPR)
	}
	return n, nil
}

func (o *ExportOptions) Run(ctx context.Context, stdout, stderr io.Writer) int {
	return runCarry(&o.commonOptions, "export", stdout, stderr, func(c *carryset.Carry) (*export.Result, error) {
		author, err := o.identity(ctx, c.Root)
		if err != nil {
			return nil, err
		}
		forkPR, err := o.forkPRNumber()
		if err != nil {
			return nil, err
		}
		return export.Run(ctx, export.Options{
			Author:              author,
			Signoff:             o.signoff,
			BaseBranch:          o.baseBranch,
			ForkVersion:         o.forkVersion,
			ForkPR:              forkPR,
			ForkVersionIncludes: o.forkVersionIncludes,
			Carry:               c,
			OutDir:              o.out,
			Force:               o.force,
			VerifyReport:        o.verifyReport,
			NoVerify:            o.noVerify,
			KCPTrees:            o.kcpTrees,
			PresubmitReport:     o.presubmitReport,
			AllowRed:            o.allowRed,
			Progress:            stderr,
		})
	}, writeExportText)
}

func writeExportText(w io.Writer, res *export.Result) {
	fmt.Fprintf(w, "%d patches by %s for %s at %s in %s:\n", len(res.Patches), res.Author, res.Repo, res.Base, res.OutDir)
	for _, p := range res.Patches {
		fmt.Fprintf(w, "  %s  (%s, from %s)\n", p.File, p.Module, p.Source)
	}
	fmt.Fprintf(w, "  %s  (the fork's pull request, titled %q)\n", export.PRFile, res.Title)
	fmt.Fprintf(w, "  %s  (a comment for kcp-dev/kcp#4551: the mitigation until the fix, to post)\n", export.CommentFile)
	for _, pr := range res.ForkPRs {
		for _, p := range pr.Patches {
			fmt.Fprintf(w, "  %s  (%s, from %s)\n", p.File, p.Module, p.Source)
		}
		fmt.Fprintf(w, "  %s  (the fork's pull request %s, titled %q, after the fix's)\n", pr.PR, pr.Name, pr.Title)
	}
	for _, pr := range res.KCPPRs {
		for _, p := range pr.Patches {
			fmt.Fprintf(w, "  %s  (for kcp-dev/kcp)\n", p.File)
		}
		text := "its pull request"
		if pr.Generic {
			text += ", from its commit messages: fill in /kind, the issue and the release note"
		}
		fmt.Fprintf(w, "  %s  (%s)\n", pr.PR, text)
		if pr.Appendix != "" {
			fmt.Fprintf(w, "  %s  (its appendix: post it as the pull request's first comment)\n", pr.Appendix)
		}
	}
	if up := res.Upstream; up != nil {
		for _, p := range up.Patches {
			fmt.Fprintf(w, "  %s  (for kubernetes/kubernetes, cut on %s)\n", p.File, strings.Join(up.Base, ", "))
		}
		fmt.Fprintf(w, "  %s  (its pull request, titled %q)\n", up.PR, up.Title)
	}
	for _, pr := range res.PullRequests {
		if presubmit := pr.Presubmit(); strings.HasPrefix(presubmit, export.Red) {
			fmt.Fprintf(w, "%s: presubmit %s, exported with --allow-red: its text says so\n", pr.Name, presubmit)
		}
	}
	if res.Verify == "" {
		fmt.Fprintln(w, "not verified (--no-verify): PR.md quotes no test run")
	}
	if !res.SignedOff {
		fmt.Fprintln(w, "not signed off: kcp requires the submitter's DCO sign-off on every commit; review the patches, then export again with --signoff")
	}
}

// identity is --author, or the person git is configured for.
func (o *ExportOptions) identity(ctx context.Context, root string) (export.Identity, error) {
	if o.author != "" {
		return export.ParseIdentity(o.author)
	}
	return export.UserIdentity(ctx, root)
}
