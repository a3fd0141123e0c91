// Command soak runs a patched kcp under the duel load for a bounded time and
// reports its RSS and goroutines at the start and the end, the requests, the
// errors and the checks (`make soak`; see pkg/harness/soak). Exit codes: 0 clean,
// 1 not clean or the soak failed, 2 usage.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kcp-carry/kcp-carry/pkg/harness/soak"
)

func main() {
	o := soak.DefaultOptions()
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.StringVar(&o.Binary, "kcp", "bin/kcp", "the kcp binary to soak")
	fs.DurationVar(&o.Duration, "duration", o.Duration, "bound of the load")
	fs.Int64Var(&o.MaxRequests, "max-requests", o.MaxRequests, "request budget of the load")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	res, err := soak.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		os.Exit(1)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(res)
	} else {
		err = res.WriteText(os.Stdout)
	}
	if err != nil || !res.Clean() {
		os.Exit(1)
	}
}
