// Command soak runs a patched kcp under the duel load for a bounded time and
// reports its RSS and goroutines at the start and the end, the requests, the
// errors and the checks (`make soak`; see pkg/harness/soak); its flags are
// parsed here (options.go). Exit codes: 0 clean, 1 not clean or the soak
// failed, 2 usage.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
)

func main() {
	o, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, pflag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n(see soak --help)\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := o.Run(ctx, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
