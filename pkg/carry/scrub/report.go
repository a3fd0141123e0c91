package scrub

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Exit codes of `carry scrub` (Report.ExitCode). They are rows of the carry
// command's one exit-status table (cmd/carry/exit.go, `carry --help`), where
// 1 is a failure, 2 a usage error and 3 `carry build`'s "not buildable here";
// no number there means two things.
const (
	ExitClean    = 0 // nothing carries the key with "": nothing left to scrub
	ExitRefused  = 4 // --apply against a server that is not a carry build, without --force; nothing written
	ExitFound    = 5 // dry run: objects carry "" (run with --apply)
	ExitScrubbed = 6 // --apply removed the key from every object that still carried ""
	ExitPartial  = 7 // a resource could not be listed, or an object could not be scrubbed
)

// Outcome is what happened to one object that carried the annotation.
type Outcome string

const (
	OutcomePolluted     Outcome = "polluted"      // carries "" (dry run: left as is)
	OutcomeScrubbed     Outcome = "scrubbed"      // the key was removed
	OutcomeOtherValue   Outcome = "other-value"   // carries another value: someone's own, left alone
	OutcomeAlreadyClean Outcome = "already-clean" // the key was gone when the patch was retried
	OutcomeGone         Outcome = "gone"          // the object was deleted meanwhile
	OutcomeFailed       Outcome = "failed"        // see Reason
)

// ObjectReport is one object that carried the annotation.
type ObjectReport struct {
	Resource  string  `json:"resource"` // as kubectl spells it
	Cluster   string  `json:"cluster"`
	Namespace string  `json:"namespace,omitempty"`
	Name      string  `json:"name"`
	Value     string  `json:"value,omitempty"` // the other value, for other-value
	Outcome   Outcome `json:"outcome"`
	Reason    string  `json:"reason,omitempty"`
	Attempts  int     `json:"attempts,omitempty"` // patches sent
	// Polluted: it carried "" when listed.
	Polluted bool `json:"polluted,omitempty"`

	res          Resource
	patchCluster string // where the object is patched: its own logical cluster
}

// newObjectReport describes u, listed in cluster listed ("*" or a workspace).
func newObjectReport(r Resource, listed string, u *unstructured.Unstructured, workspaces bool) *ObjectReport {
	cluster := logicalcluster.From(u).String()
	o := &ObjectReport{Resource: r.String(), res: r, Cluster: cluster, Namespace: u.GetNamespace(), Name: u.GetName(), patchCluster: cluster}
	if workspaces || cluster == "" {
		// Through the front-proxy the workspace path is what routes.
		o.patchCluster = listed
		if cluster == "" {
			o.Cluster = listed
		}
	}
	return o
}

// Ref is cluster|namespace/name (cluster|name when cluster-scoped).
func (o *ObjectReport) Ref() string {
	if o.Namespace == "" {
		return o.Cluster + "|" + o.Name
	}
	return o.Cluster + "|" + o.Namespace + "/" + o.Name
}

// Key is "<resource> cluster|namespace/name".
func (o *ObjectReport) Key() string { return o.Resource + " " + o.Ref() }

// APIResource is the object's resource.
func (o *ObjectReport) APIResource() Resource { return o.res }

// ResourceReport is the scan of one resource.
type ResourceReport struct {
	Resource
	Scanned      int `json:"scanned"`
	Polluted     int `json:"polluted"` // carried "" when listed
	Scrubbed     int `json:"scrubbed"`
	OtherValue   int `json:"skipped"` // carried another value: reported, left alone
	AlreadyClean int `json:"alreadyClean,omitempty"`
	Gone         int `json:"gone,omitempty"`
	Failed       int `json:"failed"`
	Aliased      int `json:"aliased,omitempty"` // the same objects as an earlier resource (by UID)
	// Error is why the resource could not be listed in full.
	Error   string          `json:"error,omitempty"`
	Objects []*ObjectReport `json:"objects,omitempty"`

	err error
}

// UnmarshalJSON reads a resource's report as --json wrote it, each object
// knowing its resource again (APIResource).
func (r *ResourceReport) UnmarshalJSON(data []byte) error {
	type plain ResourceReport
	if err := json.Unmarshal(data, (*plain)(r)); err != nil {
		return err
	}
	for _, o := range r.Objects {
		o.res = r.Resource
	}
	return nil
}

// count files the outcome of a scrub attempt.
func (r *ResourceReport) count(o *ObjectReport) {
	switch o.Outcome {
	case OutcomeScrubbed:
		r.Scrubbed++
	case OutcomeOtherValue:
		r.OtherValue++
	case OutcomeAlreadyClean:
		r.AlreadyClean++
	case OutcomeGone:
		r.Gone++
	case OutcomeFailed:
		r.Failed++
	}
}

func (r *ResourceReport) summary(apply bool) string {
	s := fmt.Sprintf("%d scanned, %d polluted", r.Scanned, r.Polluted)
	if apply {
		s += fmt.Sprintf(", %d scrubbed, %d failed", r.Scrubbed, r.Failed)
	}
	if r.OtherValue > 0 {
		s += fmt.Sprintf(", %d with another value left alone", r.OtherValue)
	}
	return s
}

// Totals add up the resources.
type Totals struct {
	Resources    int `json:"resources"`
	Scanned      int `json:"scanned"`
	Polluted     int `json:"polluted"`
	Scrubbed     int `json:"scrubbed"`
	OtherValue   int `json:"skipped"`
	AlreadyClean int `json:"alreadyClean"`
	Gone         int `json:"gone"`
	Failed       int `json:"failed"`
	ListErrors   int `json:"listErrors"`
}

// Report is one run of scrub.
type Report struct {
	Server     string `json:"server"`
	GitVersion string `json:"gitVersion"`
	CarryBuild bool   `json:"carryBuild"`
	CarryID    string `json:"carryID,omitempty"`
	Scope      string `json:"scope"`
	Apply      bool   `json:"apply"`
	Force      bool   `json:"force,omitempty"`
	// Refused says why --apply wrote nothing.
	Refused   string            `json:"refused,omitempty"`
	Resources []*ResourceReport `json:"resources"`
	Excluded  []Exclusion       `json:"excluded,omitempty"`
	Notes     []string          `json:"notes,omitempty"`
	Totals    Totals            `json:"totals"`
	// Outcome is clean, found, scrubbed, partial or refused; ExitCode its exit status.
	Outcome  string        `json:"outcome"`
	ExitCode int           `json:"exitCode"`
	Started  time.Time     `json:"started"`
	Elapsed  time.Duration `json:"elapsedNanos"`
}

func (rep *Report) finish() {
	rep.Elapsed = time.Since(rep.Started)
	t := Totals{Resources: len(rep.Resources)}
	for _, r := range rep.Resources {
		t.Scanned += r.Scanned
		t.Polluted += r.Polluted
		t.Scrubbed += r.Scrubbed
		t.OtherValue += r.OtherValue
		t.AlreadyClean += r.AlreadyClean
		t.Gone += r.Gone
		t.Failed += r.Failed
		if r.Error != "" {
			t.ListErrors++
		}
	}
	rep.Totals = t
	switch {
	case rep.Refused != "":
		rep.Outcome, rep.ExitCode = "refused", ExitRefused
	case t.Failed > 0 || t.ListErrors > 0:
		rep.Outcome, rep.ExitCode = "partial", ExitPartial
	case !rep.Apply && t.Polluted > 0:
		rep.Outcome, rep.ExitCode = "found", ExitFound
	case rep.Apply && t.Scrubbed > 0:
		rep.Outcome, rep.ExitCode = "scrubbed", ExitScrubbed
	default:
		rep.Outcome, rep.ExitCode = "clean", ExitClean
	}
}

// Polluted lists every object that carried "" when it was listed.
func (rep *Report) Polluted() []*ObjectReport {
	return rep.objects(func(o *ObjectReport) bool { return o.Polluted })
}

// OtherValues lists every object found with another value (at the scan or
// when a patch was retried).
func (rep *Report) OtherValues() []*ObjectReport {
	return rep.objects(func(o *ObjectReport) bool { return o.Outcome == OutcomeOtherValue })
}

func (rep *Report) objects(keep func(*ObjectReport) bool) []*ObjectReport {
	var out []*ObjectReport
	for _, r := range rep.Resources {
		for _, o := range r.Objects {
			if keep(o) {
				out = append(out, o)
			}
		}
	}
	return out
}

// WriteText writes the human report: a table per resource and, with list,
// every object that carried "".
func (rep *Report) WriteText(w io.Writer, list bool) error {
	mode := "dry run (nothing written; --apply removes the key)"
	if rep.Apply {
		mode = "apply"
		if rep.Force && !rep.CarryBuild {
			mode += " (--force)"
		}
	}
	build := "not a carry build"
	if rep.CarryBuild {
		build = "carry build " + rep.CarryID
	}
	fmt.Fprintf(w, "scrub %s: %s, gitVersion %s (%s), scope %s\n", rep.Server, mode, rep.GitVersion, build, rep.Scope)
	if rep.Refused != "" {
		fmt.Fprintf(w, "refused: %s\n", rep.Refused)
		return nil
	}
	fmt.Fprintf(w, "%d built-in resources scanned, %d left out (served by CRDs or APIBindings, or without list and patch; --json lists them)\n", len(rep.Resources), len(rep.Excluded))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "RESOURCE\tSCANNED\tPOLLUTED\tSCRUBBED\tOTHER VALUE\tFAILED\t")
	for _, r := range rep.Resources {
		if r.Scanned == 0 && r.Polluted == 0 && r.Error == "" && !list {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", r.Resource, r.Scanned, r.Polluted, r.Scrubbed, r.OtherValue, r.Failed)
	}
	t := rep.Totals
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t%d\t\n", t.Scanned, t.Polluted, t.Scrubbed, t.OtherValue, t.Failed)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rep.Resources {
		if r.Error != "" {
			fmt.Fprintf(w, "%s: not scanned in full: %s\n", r.Resource, r.Error)
		}
		for _, o := range r.Objects {
			switch {
			case o.Outcome == OutcomeOtherValue:
				fmt.Fprintf(w, "left alone: %s %s carries %s=%q\n", r.Resource, o.Ref(), Annotation, o.Value)
			case o.Outcome == OutcomeFailed:
				fmt.Fprintf(w, "failed: %s %s: %s\n", r.Resource, o.Ref(), o.Reason)
			case list:
				fmt.Fprintf(w, "%s: %s %s\n", o.Outcome, r.Resource, o.Ref())
			}
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	switch rep.Outcome {
	case "clean":
		fmt.Fprintf(w, "clean: no object carries %s=\"\" (%s)\n", Annotation, rep.Elapsed.Round(time.Millisecond))
	case "found":
		fmt.Fprintf(w, "found: %d objects carry %s=\"\"; run again with --apply to remove the key (%s)\n", t.Polluted, Annotation, rep.Elapsed.Round(time.Millisecond))
	case "scrubbed":
		fmt.Fprintf(w, "scrubbed: removed %s=\"\" from %d objects (%s)\n", Annotation, t.Scrubbed, rep.Elapsed.Round(time.Millisecond))
	case "partial":
		fmt.Fprintf(w, "partial: %d objects failed, %d resources not listed in full; run again after fixing the cause (%s)\n", t.Failed, t.ListErrors, rep.Elapsed.Round(time.Millisecond))
	}
	return nil
}
