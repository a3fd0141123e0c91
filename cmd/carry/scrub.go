package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kcp-carry/kcp-carry/pkg/carry/scrub"
	"github.com/kcp-carry/kcp-carry/pkg/util/cmdline"
)

// ScrubOptions are carry scrub's flags, onto scrub.Options. The connection
// flags are kubectl's (cli-runtime's ConfigFlags, as kubectl plugins bind
// them): --kubeconfig, --context, --server, --token,
// --certificate-authority, --client-certificate, --as, ...
type ScrubOptions struct {
	commonOptions
	conn                  *genericclioptions.ConfigFlags
	connFlags             *pflag.FlagSet
	workspaces, resources []string
	qps                   float64
	list                  bool
	run                   scrub.Options
}

func NewScrubOptions() *ScrubOptions {
	d := scrub.DefaultOptions()
	conn := genericclioptions.NewConfigFlags(false)
	// scrub reads every namespace and does its own discovery: kubectl's
	// --namespace and discovery cache do not apply.
	conn.Namespace, conn.CacheDir = nil, nil
	return &ScrubOptions{run: d, qps: float64(d.QPS), conn: conn}
}

func (o *ScrubOptions) AddFlags(fs *pflag.FlagSet) {
	o.commonOptions.AddFlags(fs)
	d := &o.run
	// The connection flags are bound on a set of their own first, so that
	// errors can name the ones given (connection).
	o.connFlags = pflag.NewFlagSet("connection", pflag.ContinueOnError)
	o.conn.AddFlags(o.connFlags)
	fs.AddFlagSet(o.connFlags)
	// kubectl's help for the two that matter most here.
	fs.Lookup("context").Usage = "kubeconfig context; it must LIST through /clusters/* (kcp's shard-base) unless --workspaces is given"
	fs.Lookup("server").Usage = "server base URL, e.g. https://127.0.0.1:6443 (with --token or --client-certificate/--client-key, and --certificate-authority); its user must LIST through /clusters/* unless --workspaces is given"
	cmdline.ListVar(fs, &o.workspaces, "workspaces", nil, "scan these workspaces (paths or logical cluster names, comma-separated) one by one, e.g. through the front-proxy, instead of /clusters/*")
	cmdline.ListVar(fs, &o.resources, "resources", nil, "scan only these resources, as kubectl spells them (configmaps,clusterroles.rbac.authorization.k8s.io); default every built-in one that supports list and patch")
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
	cfg, err := o.conn.ToRESTConfig()
	if err != nil {
		return fail(stderr, "scrub", fmt.Errorf("%s: %w", o.connection(), err))
	}
	opts := o.run
	opts.Config = cfg
	opts.Progress = stderr
	rep, err := scrub.Run(ctx, opts)
	if err != nil {
		return fail(stderr, "scrub", fmt.Errorf("%w (server %s from %s)", err, cfg.Host, o.connection()))
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

// connection names the connection flags given, for errors: their values,
// except a secret's.
func (o *ScrubOptions) connection() string {
	var parts []string
	o.connFlags.VisitAll(func(f *pflag.Flag) {
		if !f.Changed {
			return
		}
		switch f.Name {
		case "token", "password":
			parts = append(parts, "--"+f.Name+" (set)")
		default:
			parts = append(parts, fmt.Sprintf("--%s %q", f.Name, f.Value.String()))
		}
	})
	if len(parts) == 0 {
		return "the default kubeconfig ($KUBECONFIG or ~/.kube/config) and its current context"
	}
	return strings.Join(parts, " ")
}

// scrubLong is carry scrub's --help text above the flags.
func scrubLong() string {
	return fmt.Sprintf(`Finds the %s: "" that a kcp on the pristine fork persisted into etcd and,
with --apply, removes exactly that key (a JSON patch that tests the value first),
across all logical clusters. Any other value is reported and left alone.

It connects as kubectl does: --kubeconfig and --context, or --server with
--token (or --client-certificate and --client-key) and --certificate-authority,
--as to impersonate, and the rest of kubectl's connection flags. As a kubectl
plugin (bin/kubectl-carry on PATH) it is "kubectl carry scrub".`,
		scrub.Annotation)
}
