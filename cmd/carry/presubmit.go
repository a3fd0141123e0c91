package main

import (
	"context"
	"io"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carryset"
	"github.com/kcp-carry/kcp-carry/pkg/carry/export"
)

// presubmitLong is carry presubmit's help.
const presubmitLong = `Runs the presubmit of every pull request carry export writes, in merge order, as its upstream's CI
runs it for the files it touches: for the fork, go test -race of the touched packages at the fork pin
with the fork's series up to it; for Kubernetes, go test -race in the touched staging modules on the
modules the series is cut on; for kcp, go test -race and go vet of the touched packages on a copy of
--kcp-source (--kcp-release-source for a backport form) with kcp-patches/ applied up to it, and, with
--e2e, the e2e tests it adds through kcp's make test-e2e-shared-minimal on kcp after the whole series
with the carry's overlay. A fix's tests run again without its other changes, and must fail. Prints one
table (pull request, upstream, base, applies, presubmit, red without it, time); --json prints the report
carry export --presubmit-report reads. Minutes to hours: kcp's tests compile most of kcp under -race.`

// PresubmitOptions are carry presubmit's flags.
type PresubmitOptions struct {
	commonOptions
	kcpSource, kcpReleaseSource string
	only                        []string
	e2e                         bool
}

func NewPresubmitOptions() *PresubmitOptions { return &PresubmitOptions{} }

func (o *PresubmitOptions) AddFlags(fs *pflag.FlagSet) {
	o.commonOptions.AddFlags(fs)
	fs.StringVar(&o.kcpSource, "kcp-source", "", "kcp main tree `DIR` the kcp pull requests are cut on (read only; without it they are not run)")
	fs.StringVar(&o.kcpReleaseSource, "kcp-release-source", "", "kcp release tree `DIR` (v0.32.3) the backport forms (kcp-patches/<n>-<name>/release-0.32/) are cut on")
	fs.StringArrayVar(&o.only, "only", nil, "run only the pull request `NAME` (its directory in carry export's --out, kcp-dev-kubernetes for the fork's fix; repeatable)")
	fs.BoolVar(&o.e2e, "e2e", false, "run the e2e checks too (kcp's make test-e2e-shared-minimal on kcp after the whole series with the overlay); without it they are listed as not run")
}

func (o *PresubmitOptions) Run(ctx context.Context, stdout, stderr io.Writer) int {
	return runCarry(&o.commonOptions, "presubmit", stdout, stderr, func(c *carryset.Carry) (*export.PresubmitReport, error) {
		return export.Presubmit(ctx, export.PresubmitOptions{
			Carry: c, KCPSource: o.kcpSource, KCPReleaseSource: o.kcpReleaseSource,
			Only: o.only, E2E: o.e2e, Progress: stderr,
		})
	}, func(w io.Writer, r *export.PresubmitReport) { r.WriteTable(w) })
}
