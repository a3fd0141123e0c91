package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
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

func (l *listFlag) Type() string { return "list" }

// ScrubOptions are carry scrub's flags, onto scrub.Options.
type ScrubOptions struct {
	commonOptions
	kubeconfig, kubeContext string
	workspaces, resources   listFlag
	qps                     float64
	list                    bool
	run                     scrub.Options
}

func NewScrubOptions() *ScrubOptions {
	d := scrub.DefaultOptions()
	return &ScrubOptions{run: d, qps: float64(d.QPS)}
}

func (o *ScrubOptions) AddFlags(fs *pflag.FlagSet) {
	o.commonOptions.AddFlags(fs)
	d := &o.run
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config, as kubectl)")
	fs.StringVar(&o.kubeContext, "context", "", "kubeconfig context; it must LIST through /clusters/* (kcp's shard-base) unless --workspaces is given")
	fs.Var(&o.workspaces, "workspaces", "scan these workspaces (paths or logical cluster names, comma-separated) one by one, e.g. through the front-proxy, instead of /clusters/*")
	fs.Var(&o.resources, "resources", "scan only these resources, as kubectl spells them (configmaps,clusterroles.rbac.authorization.k8s.io); default every built-in one that supports list and patch")
	fs.StringVar(&d.DiscoveryCluster, "discovery-cluster", d.DiscoveryCluster, "logical cluster whose discovery names the built-in resources (wildcard mode)")
	fs.Int64Var(&d.PageSize, "page-size", d.PageSize, "objects per LIST page")
	fs.Float64Var(&o.qps, "qps", o.qps, "requests per second, all requests of the run together")
	fs.IntVar(&d.Burst, "burst", d.Burst, "burst above --qps")
	fs.BoolVar(&d.Apply, "apply", false, "remove the key (default: dry run, nothing written)")
	fs.BoolVar(&d.Force, "force", false, "with --apply: scrub a server that is not a carry build (it will pollute again)")
	fs.BoolVar(&o.list, "list", false, "print every object that carries the key, as cluster|namespace/name")
	fs.IntVar(&d.MaxAttempts, "max-attempts", d.MaxAttempts, "patches per object before it counts as failed (conflicts are retried after a re-read)")
	fs.DurationVar(&d.ProgressEvery, "progress-interval", d.ProgressEvery, "how often a progress line goes to stderr")
}

// Complete fills scrub.Options with the flags that are not its fields.
func (o *ScrubOptions) Complete() error {
	o.run.Workspaces, o.run.Resources = o.workspaces, o.resources
	o.run.QPS = float32(o.qps)
	return nil
}

func (o *ScrubOptions) Validate() error {
	if o.run.Force && !o.run.Apply {
		return errors.New("--force goes with --apply")
	}
	return nil
}

func (o *ScrubOptions) Run(ctx context.Context, stdout, stderr io.Writer) int {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.kubeContext}).ClientConfig()
	if err != nil {
		return fail(stderr, "scrub", fmt.Errorf("--kubeconfig %q --context %q: %w", o.kubeconfig, o.kubeContext, err))
	}
	opts := o.run
	opts.Config = cfg
	opts.Progress = stderr
	rep, err := scrub.Run(ctx, opts)
	if err != nil {
		return fail(stderr, "scrub", fmt.Errorf("%w (server %s from --kubeconfig %q --context %q)", err, cfg.Host, o.kubeconfig, o.kubeContext))
	}
	if o.json {
		err = writeJSON(stdout, rep)
	} else {
		err = rep.WriteText(stdout, o.list)
	}
	if err != nil {
		return fail(stderr, "scrub", err)
	}
	return rep.ExitCode
}

// scrubLong is carry scrub's --help text above the flags.
func scrubLong() string {
	return fmt.Sprintf(`Finds the %s: "" that a kcp on the pristine fork persisted into etcd and,
with --apply, removes exactly that key (a JSON patch that tests the value first),
across all logical clusters. Any other value is reported and left alone.

Exit status: %d clean (nothing left to scrub), 1 failed, 2 usage, %d refused (not a
carry build; nothing written), %d found (dry run), %d scrubbed, %d partial failure.`,
		scrub.Annotation, scrub.ExitClean, scrub.ExitRefused, scrub.ExitFound, scrub.ExitScrubbed, scrub.ExitPartial)
}
