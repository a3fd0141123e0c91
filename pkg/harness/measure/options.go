// Package measure runs the duel behind `make evidence` and writes its
// report: the same hammer load (pkg/harness/hammer) against a test shard
// (pkg/harness/server) linked against the pristine fork and one linked against the
// carry, one shard under load at a time, measured three ways (see pkg/evidence/report),
// then evidence/duel.json, evidence/lists-per-second.svg (gonum/plot) and
// evidence/README.md.
//
// It is a report, not a test: the live suite (test/e2e) asserts what must
// hold. Every load is bounded by a duration and a request budget.
package measure

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
)

// Options configure Run. Start from DefaultOptions.
type Options struct {
	// Root is the repository: the shards are built there (server.ShardBuilder)
	// and its HEAD is recorded.
	Root string
	// PristineBinary and PatchedBinary are prebuilt test shards; empty
	// means a server.ShardBuilder build.
	PristineBinary string
	PatchedBinary  string

	// Load is the duel's: Listers (the hammer's default mix), Watchers and
	// Writers, bounded by Duration and MaxRequests per shard. Its Objects
	// (per logical cluster and resource: ClusterRoles and ConfigMaps) and
	// Annotations are what every run seeds.
	hammer.Load

	// The single-lister rounds and the scaling steps use StepLister for
	// every lister, no watchers and no writers, each run bounded by
	// StepDuration and StepMaxRequests.
	StepDuration    time.Duration
	StepMaxRequests int64
	StepLister      requestshape.Shape
	// Rounds is how many single-lister runs each shard gets; the shard that
	// goes first alternates (pristine first in odd rounds).
	Rounds int
	// Steps are the numbers of listers of the scaling runs, growing.
	Steps []int

	// Clusters are the logical clusters the hammer seeds.
	Clusters []string

	// Note is recorded with the setup, e.g. that the machine was shared.
	Note string
	// Command is the command line that ran it, for the README.
	Command string

	// Logf receives a line per run; nil discards.
	Logf func(format string, args ...any)
	// HammerLogf receives the hammer's phase messages; nil discards.
	HammerLogf func(format string, args ...any)
}

// DefaultOptions are `make evidence`'s: the live suite's duel load for 20 s,
// 4 single-lister rounds and 1 → 16 listers for 5 s each; about four
// minutes on two cores.
func DefaultOptions() Options {
	return Options{
		Load:            hammer.DefaultLoad(),
		StepDuration:    5 * time.Second,
		StepMaxRequests: 100000,
		StepLister:      requestshape.StepLister,
		Rounds:          4,
		Steps:           []int{1, 2, 4, 8, 16},
		Clusters:        []string{"evidence-a", "evidence-b", "evidence-c"},
	}
}

// maxDuration and maxLoadListers keep a mistyped flag from hogging a shared machine.
const (
	maxDuration    = 5 * time.Minute
	maxLoadListers = 64
)

// Validate reports every bad option, naming the flag.
func (o *Options) Validate() error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...)))
	}
	if o.Root == "" {
		errs = append(errs, errors.New("no repository root"))
	}
	if o.Duration <= 0 || o.Duration > maxDuration {
		bad("duration", "must be in (0, %s], got %s", maxDuration, o.Duration)
	}
	if o.StepDuration <= 0 || o.StepDuration > maxDuration {
		bad("step-duration", "must be in (0, %s], got %s", maxDuration, o.StepDuration)
	}
	if o.MaxRequests <= 0 {
		bad("max-requests", "must be positive, got %d", o.MaxRequests)
	}
	if o.StepMaxRequests <= 0 {
		bad("step-max-requests", "must be positive, got %d", o.StepMaxRequests)
	}
	if o.Listers < 1 || o.Listers > maxLoadListers {
		bad("listers", "must be in [1, %d], got %d", maxLoadListers, o.Listers)
	}
	if o.Watchers < 0 || o.Writers < 0 {
		bad("watchers/--writers", "must not be negative")
	}
	if o.Rounds < 1 || o.Rounds > 20 {
		bad("rounds", "must be in [1, 20], got %d", o.Rounds)
	}
	if len(o.Steps) == 0 {
		bad("steps", "no step given")
	}
	prev := 0
	for _, n := range o.Steps {
		if n <= prev || n > maxLoadListers {
			bad("steps", "must grow, each in [1, %d]: %s", maxLoadListers, JoinInts(o.Steps))
			break
		}
		prev = n
	}
	if o.StepLister == (requestshape.Shape{}) {
		bad("step-lister", "no lister shape")
	} else if err := hammer.CheckListerShape(o.StepLister); err != nil {
		bad("step-lister", "%v", err)
	}
	if len(o.Clusters) == 0 {
		bad("clusters", "no logical cluster given")
	}
	if o.Objects <= 0 || o.Objects > 1000 {
		bad("objects", "must be in [1, 1000], got %d", o.Objects)
	}
	// The hammer checks the rest (cluster names) with its own flag names.
	h := o.hammerOptions()
	h.Config = nil
	if err := h.Validate(); err != nil {
		for _, e := range unjoin(err) {
			if !strings.HasPrefix(e.Error(), "no server") {
				errs = append(errs, e)
			}
		}
	}
	return errors.Join(errs...)
}

// hammerOptions are the options every run shares; callers set the load.
func (o *Options) hammerOptions() hammer.Options {
	h := hammer.DefaultOptions()
	h.Clusters = append([]string(nil), o.Clusters...)
	h.Objects, h.Annotations = o.Objects, o.Annotations
	h.Logf = o.HammerLogf
	return h
}

// duelLoad is the duel's load.
func (o *Options) duelLoad() hammer.Options {
	h := o.hammerOptions()
	h.Load = o.Load
	return h
}

// stepLoad is n listers of StepLister, nothing else, no checks after.
func (o *Options) stepLoad(n int) hammer.Options {
	h := o.hammerOptions()
	h.Listers, h.Watchers, h.Writers = n, 0, 0
	h.ListerShapes = []requestshape.Shape{o.StepLister}
	h.Duration, h.MaxRequests = o.StepDuration, o.StepMaxRequests
	h.NoAfterChecks = true
	return h
}

// JoinInts spells numbers as --steps takes them: "1,2,4".
func JoinInts(ns []int) string {
	var s []string
	for _, n := range ns {
		s = append(s, fmt.Sprint(n))
	}
	return strings.Join(s, ",")
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
