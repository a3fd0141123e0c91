package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kcp-carry/kcp-carry/pkg/carry/scrub"
)

// listFlag collects a comma-separated, repeatable list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

func runScrub(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("scrub", "scrub [--kubeconfig FILE] [--context NAME] [--workspaces root,root:org] [--resources configmaps,...] [--apply [--force]] [--list] [--json]", stderr)
	d := scrub.DefaultOptions()
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config, as kubectl)")
	kubeContext := fs.String("context", "", "kubeconfig context; it must LIST through /clusters/* (kcp's shard-base) unless --workspaces is given")
	var workspaces, resources listFlag
	fs.Var(&workspaces, "workspaces", "scan these workspaces (paths or logical cluster names, comma-separated) one by one, e.g. through the front-proxy, instead of /clusters/*")
	fs.Var(&resources, "resources", "scan only these resources, as kubectl spells them (configmaps,clusterroles.rbac.authorization.k8s.io); default every built-in one that supports list and patch")
	discoveryCluster := fs.String("discovery-cluster", d.DiscoveryCluster, "logical cluster whose discovery names the built-in resources (wildcard mode)")
	pageSize := fs.Int64("page-size", d.PageSize, "objects per LIST page")
	qps := fs.Float64("qps", float64(d.QPS), "requests per second, all requests of the run together")
	burst := fs.Int("burst", d.Burst, "burst above --qps")
	apply := fs.Bool("apply", false, "remove the key (default: dry run, nothing written)")
	force := fs.Bool("force", false, "with --apply: scrub a server that is not a carry build (it will pollute again)")
	list := fs.Bool("list", false, "print every object that carries the key, as cluster|namespace/name")
	maxAttempts := fs.Int("max-attempts", d.MaxAttempts, "patches per object before it counts as failed (conflicts are retried after a re-read)")
	progressEvery := fs.Duration("progress-interval", d.ProgressEvery, "how often a progress line goes to stderr")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `usage: carry scrub [flags]

Finds the %s: "" that a kcp on the pristine fork persisted into etcd and,
with --apply, removes exactly that key (a JSON patch that tests the value first),
across all logical clusters. Any other value is reported and left alone.

Exit status: %d clean (nothing left to scrub), 1 failed, 2 usage, %d refused (not a
carry build; nothing written), %d found (dry run), %d scrubbed, %d partial failure.

flags:
`, scrub.Annotation, scrub.ExitClean, scrub.ExitRefused, scrub.ExitFound, scrub.ExitScrubbed, scrub.ExitPartial)
		fs.PrintDefaults()
	}
	if code, done := fs.parse(args); done {
		return code
	}
	if *force && !*apply {
		fmt.Fprintln(stderr, "carry scrub: --force goes with --apply")
		return ExitUsage
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: *kubeContext}).ClientConfig()
	if err != nil {
		return fail(stderr, "scrub", fmt.Errorf("--kubeconfig %q --context %q: %w", *kubeconfig, *kubeContext, err))
	}
	o := d
	o.Config = cfg
	o.Workspaces, o.Resources, o.DiscoveryCluster = workspaces, resources, *discoveryCluster
	o.PageSize, o.QPS, o.Burst = *pageSize, float32(*qps), *burst
	o.Apply, o.Force, o.MaxAttempts = *apply, *force, *maxAttempts
	o.Progress, o.ProgressEvery = stderr, *progressEvery
	rep, err := scrub.Run(ctx, o)
	if err != nil {
		return fail(stderr, "scrub", fmt.Errorf("%w (server %s from --kubeconfig %q --context %q)", err, cfg.Host, *kubeconfig, *kubeContext))
	}
	if fs.json {
		err = writeJSON(stdout, rep)
	} else {
		err = rep.WriteText(stdout, *list)
	}
	if err != nil {
		return fail(stderr, "scrub", err)
	}
	return rep.ExitCode
}
