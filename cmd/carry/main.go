// Command carry manages kcp-carry's patches on top of kcp's Kubernetes
// fork: pins, the patched-module overlay, patch refresh, kcp builds and
// images, the positive control and the upstream export. Its flags are parsed
// here (cli.go and one file per subcommand).
package main

import (
	"os"
	"path/filepath"
)

func main() {
	// make installs this binary as bin/carry and as bin/kubectl-carry, the
	// kubectl plugin that `kubectl carry ...` runs.
	if filepath.Base(os.Args[0]) == "kubectl-carry" {
		displayName = "kubectl carry"
	}
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}
