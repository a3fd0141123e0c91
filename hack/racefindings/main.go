// Command racefindings groups the data race reports a run wrote
// (GORACE=log_path=<dir>/race: <dir>/race.<pid>) by key, and sorts the groups
// against docs/races.known: the ones written up, then the new ones, each with
// its count and the first report's stacks, for docs/races.md.
//
//	go run ./hack/racefindings [-known docs/races.known] <dir>
//
// hack/kcp-race-target.sh runs it on the reports of kcp's race target.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kcp-carry/kcp-carry/pkg/harness/racereport"
)

func main() {
	knownPath := flag.String("known", "docs/races.known", "the known-races file")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: racefindings [-known FILE] DIR")
		os.Exit(2)
	}
	if err := run(*knownPath, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "racefindings:", err)
		os.Exit(1)
	}
}

func run(knownPath, dir string) error {
	known, err := racereport.LoadKnown(knownPath)
	if err != nil {
		return err
	}
	reps, files, err := racereport.ParseDir(dir)
	if err != nil {
		return err
	}
	gs := racereport.GroupByKey(reps)
	written, unknown := known.Split(gs)
	fmt.Printf("# Race reports in %s\n\n%d report(s) in %d file(s), %d group(s): %d known, %d new.\n\n",
		dir, len(reps), len(files), len(gs), len(written), len(unknown))
	for _, g := range written {
		fmt.Printf("Known (%s): `%s`, %d report(s)\n\n", known[g.Key].Where, g.Key, len(g.Reports))
	}
	if len(unknown) > 0 {
		fmt.Print("## New\n\n")
		racereport.Markdown(os.Stdout, unknown)
	}
	return nil
}
