// Command hammer drives a kcp shard (or the kcp-carry test shard) with
// concurrent wildcard partial-metadata LISTs and WATCHes and label writers,
// and checks the kcp.io/original-api-version carry: see pkg/harness/hammer and
// `hammer --help`; its flags are parsed here (options.go). Exit codes: 0
// clean, 1 hammer failed or nothing checked, 2 usage, 3 server died, 4 check
// violated, 5 server answered 5xx.
package main

import (
	"os"

	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/util/cmdline"
)

func main() {
	o, err := parseArgs(os.Args[1:], os.Stderr)
	cmdline.Exit("hammer", o, err, hammer.ExitUsage)
}
