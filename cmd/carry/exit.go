package main

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/kcp-carry/kcp-carry/pkg/carry/scrub"
)

// Exit statuses of every carry subcommand: one table, where no number means
// two things. `carry --help` renders it (exitTable), the subcommands that
// have statuses of their own show their rows, and README.md and docs/scrub.md
// point here.
const (
	ExitOK    = 0
	ExitFail  = 1
	ExitUsage = 2
	// ExitUnfetchable: carry build or image cannot fetch kcp's module graph
	// on this machine, so `make` tells "not possible here" from a broken
	// build.
	ExitUnfetchable = 3
	// carry scrub's outcomes; pkg/carry/scrub reports them as
	// Report.ExitCode (its --json "exitCode").
	ExitRefused  = scrub.ExitRefused
	ExitFound    = scrub.ExitFound
	ExitScrubbed = scrub.ExitScrubbed
	ExitPartial  = scrub.ExitPartial
)

// exitStatus is one row of the table; docs/exit-status.md has the same rows.
type exitStatus struct {
	Code     int
	Name     string
	Commands []string // the subcommands that use it; none: every one
	Meaning  string
}

// exitStatuses is the table, in order of the code.
var exitStatuses = []exitStatus{
	{ExitOK, "ok", nil, "done; carry scrub: clean, nothing left to scrub"},
	{ExitFail, "failed", nil, "a check or an operation failed; the error is on stderr"},
	{ExitUsage, "usage", nil, "an unknown command or flag, a bad value, or flags that do not go together; the message names the flag"},
	{ExitUnfetchable, "unbuildable", []string{"build", "image"}, "not buildable here: a module of kcp's graph cannot be fetched on this machine (the message names it); make then skips bin/kcp"},
	{ExitRefused, "refused", []string{"scrub"}, "--apply against a server that is not a carry build, without --force; nothing written"},
	{ExitFound, "found", []string{"scrub"}, `dry run: objects carry kcp.io/original-api-version: ""; --apply removes the key`},
	{ExitScrubbed, "scrubbed", []string{"scrub"}, "--apply removed the key from every object that still carried it"},
	{ExitPartial, "partial", []string{"scrub"}, "partial failure: a resource could not be listed, or an object could not be scrubbed"},
}

// exitTable renders the rows for command ("" for all of them, with the
// commands that use each).
func exitTable(command string) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, s := range exitStatuses {
		if command != "" && len(s.Commands) > 0 && !slices.Contains(s.Commands, command) {
			continue
		}
		who := "all"
		if len(s.Commands) > 0 {
			who = strings.Join(s.Commands, ", ")
		}
		if command != "" {
			fmt.Fprintf(tw, "  %d\t%s\t%s\n", s.Code, s.Name, s.Meaning)
		} else {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", s.Code, s.Name, who, s.Meaning)
		}
	}
	_ = tw.Flush()
	return "Exit status (docs/exit-status.md):\n" + b.String()
}

// hasOwnExitStatus says whether a row of the table is command's alone.
func hasOwnExitStatus(command string) bool {
	for _, s := range exitStatuses {
		if slices.Contains(s.Commands, command) {
			return true
		}
	}
	return false
}
