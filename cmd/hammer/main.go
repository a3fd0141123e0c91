// Command hammer drives a kcp shard (or the kcp-carry test shard) with
// concurrent wildcard partial-metadata LISTs and WATCHes and label writers,
// and checks the kcp.io/original-api-version carry: see pkg/harness/hammer and
// `hammer --help`; its flags are parsed here (options.go). Exit codes: 0
// clean, 1 hammer failed or nothing checked, 2 usage, 3 server died, 4 check
// violated, 5 server answered 5xx.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
)

func main() {
	os.Exit(run())
}

func run() int {
	cli, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return hammer.ExitClean
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "hammer: %v\n(see hammer --help)\n", err)
		return hammer.ExitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if cli.cleanupOnly {
		n, err := hammer.CleanupAll(ctx, cli.run)
		fmt.Printf("hammer: deleted %d objects\n", n)
		if err != nil {
			fmt.Fprintf(os.Stderr, "hammer: cleanup: %v\n", err)
			return hammer.ExitFailure
		}
		return hammer.ExitClean
	}

	opts := cli.run
	if cli.progress == "always" || (cli.progress == "auto" && hammer.IsTerminal(os.Stderr)) {
		opts.Progress = os.Stderr
		opts.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	}
	rep, err := hammer.Run(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hammer: %v\n", err)
		return hammer.ExitUsage
	}
	if cli.json {
		err = rep.WriteJSON(os.Stdout)
	} else {
		err = rep.WriteText(os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "hammer: writing the report: %v\n", err)
		return hammer.ExitFailure
	}
	return rep.ExitCode
}
