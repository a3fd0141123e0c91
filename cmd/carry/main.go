// Command carry manages kcp-carry's patches on top of kcp's Kubernetes
// fork: pins, the patched-module overlay, and patch refresh.
package main

import (
	"os"

	"github.com/kcp-carry/kcp-carry/pkg/carry/carrycli"
)

func main() {
	os.Exit(carrycli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
