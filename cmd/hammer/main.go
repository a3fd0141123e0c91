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
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
)

func main() {
	o, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, pflag.ErrHelp) {
		os.Exit(hammer.ExitClean)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "hammer: %v\n(see hammer --help)\n", err)
		os.Exit(hammer.ExitUsage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := o.Run(ctx, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
