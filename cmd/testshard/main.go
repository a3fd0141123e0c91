// Command testshard runs a test shard built from kcp's fork, not kcp: kcp's
// embedded etcd, the fork's API server with its watch cache, ConfigMaps,
// ClusterRoles and Roles, behind kcp's request filters, on 127.0.0.1 only.
//
// Logs go to stderr. When the shard is ready it writes <root-dir>/admin.kubeconfig
// and prints one JSON line on stdout:
//
//	{"url":"https://127.0.0.1:PORT","kubeconfig":".../admin.kubeconfig",...}
//
// --cache-mutation-detector (or KCP_CARRY_CACHE_MUTATION_DETECTOR=true) turns
// on the watch-cache mutation detector, a debugging aid: every read path that
// writes into an object shared with the watch cache is reported on stderr as a
// "cache-mutation-finding: {json}" line, in the log and in /metrics.
//
// SIGTERM or SIGINT stop it; the temporary root dir is removed unless
// --keep-root-dir (or --root-dir) is given.
package main

import (
	"context"
	"encoding/json"
	"errors"
	goflag "flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"k8s.io/klog/v2"

	"github.com/kcp-carry/kcp-carry/pkg/harness/testshard"
	"github.com/kcp-carry/kcp-carry/pkg/util/cmdline"
)

func main() {
	opts := testshard.NewOptions()
	if err := cmdline.Parse("testshard", withKlog{opts}, os.Args[1:], "", os.Stderr); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "testshard:", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	opts.OnReady = func(r testshard.Ready) {
		line, err := json.Marshal(r)
		if err != nil {
			klog.ErrorS(err, "encoding ready line")
			return
		}
		fmt.Fprintf(os.Stdout, "%s\n", line)
	}
	err := testshard.Run(ctx, *opts)
	klog.Flush()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testshard:", err)
		os.Exit(1)
	}
}

// withKlog adds klog's flags to the shard's options for cmdline.Parse.
type withKlog struct{ *testshard.Options }

func (o withKlog) AddFlags(fs *pflag.FlagSet) {
	o.Options.AddFlags(fs)
	klogFlags := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
}
