// Command soak runs a patched kcp under the duel load for a bounded time and
// reports its RSS and goroutines at the start and the end, the requests, the
// errors and the checks (`make soak`; see pkg/harness/soak); its flags are
// parsed here (options.go). Exit codes: 0 clean, 1 not clean or the soak
// failed, 2 usage.
package main

import (
	"os"

	"github.com/kcp-carry/kcp-carry/pkg/util/cmdline"
)

func main() {
	o, err := parseArgs(os.Args[1:], os.Stderr)
	cmdline.Exit("soak", o, err, 2)
}
