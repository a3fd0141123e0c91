package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kcp-carry/kcp-carry/pkg/harness/checks"
	"github.com/kcp-carry/kcp-carry/pkg/harness/hammer"
	"github.com/kcp-carry/kcp-carry/pkg/util/cmdline"
)

// options are the hammer command's flags, in kcp's Options pattern: AddFlags
// binds them, Complete turns them into hammer.Options, Validate checks the
// result, Run runs the hammer. Flags that map one to one onto hammer.Options
// are bound there.
type options struct {
	run       hammer.Options
	rules     *clientcmd.ClientConfigLoadingRules
	overrides *clientcmd.ConfigOverrides

	resources, listerShapes, scope, writeMode string
	progress, probeRV, probeMeta              string

	json        bool // print the report as JSON
	cleanupOnly bool // delete what earlier runs left, then exit
}

func NewOptions() *options {
	d := hammer.DefaultOptions()
	return &options{
		run:       d,
		rules:     clientcmd.NewDefaultClientConfigLoadingRules(),
		overrides: &clientcmd.ConfigOverrides{},
		resources: "clusterroles,configmaps",
		scope:     string(d.Scope),
		writeMode: string(d.WriteMode),
		progress:  "auto",
		probeRV:   d.ProbeResourceVersion,
		probeMeta: d.ProbeMetaVersion,
	}
}

// AddFlags binds the options to fs.
func (o *options) AddFlags(fs *pflag.FlagSet) {
	bindConnectionFlags(fs, o.rules, o.overrides)
	d := o.run // the defaults, from newOptions
	fs.StringVar(&o.resources, "resources", o.resources, "resources to seed, list, watch and write: clusterroles (rbac.authorization.k8s.io/v1), configmaps (v1), apiexports (apis.kcp.io/v1alpha2, kcp only)")
	cmdline.ListVar(fs, &o.run.Clusters, "clusters", d.Clusters, "logical clusters to seed and write in, comma-separated")
	fs.StringVar(&o.listerShapes, "lister-shapes", "", "request shapes of the listers, cycled over them: <v1|v1beta1|kcp>:<rv>[:paged] with rv empty or 0, kcp = kcp's metadata client (default: pkg/harness/requestshape's HammerListers, starting with kcp:0)")
	fs.StringVar(&o.scope, "scope", o.scope, "where listers and watchers go: wildcard (/clusters/*) or cluster (/clusters/<name>, a control)")
	fs.StringVar(&o.writeMode, "write-mode", o.writeMode, "how writers set the label: update (GET+PUT), patch (merge PATCH), mixed")
	fs.StringVar(&o.progress, "progress", o.progress, "live progress line on stderr: auto (when stderr is a terminal), always, never")
	fs.StringVar(&o.probeRV, "probe-rv", o.probeRV, `resourceVersion of the --sequential-probe LIST: "0" or ""`)
	fs.StringVar(&o.probeMeta, "probe-meta-version", o.probeMeta, "meta.k8s.io version of the --sequential-probe LIST: v1 or v1beta1")
	fs.StringVar(&o.run.Namespace, "namespace", d.Namespace, "namespace of namespaced objects (created when missing)")
	fs.StringVar(&o.run.Prefix, "prefix", d.Prefix, "name prefix of seeded objects")
	o.run.Load.AddFlags(fs)
	fs.Int64Var(&o.run.PageSize, "page-size", d.PageSize, "limit of paginated listers")
	fs.DurationVar(&o.run.WatchWindow, "watch-window", d.WatchWindow, "how long each watch stays open")
	fs.IntVar(&o.run.MixedWatchers, "mixed-watchers", d.MixedWatchers, "groups of mixed watchers for check (d): each keeps a wildcard and a single-cluster partial-metadata watch of one resource open at once (meta.k8s.io v1 and v1beta1), window after window")
	fs.DurationVar(&o.run.RequestTimeout, "request-timeout", d.RequestTimeout, "timeout of one request")
	fs.DurationVar(&o.run.SyncTimeout, "sync-timeout", d.SyncTimeout, "how long to wait for the watch cache to show the seeded objects")
	fs.BoolVar(&o.run.NoSeed, "no-seed", false, "do not create missing objects")
	fs.BoolVar(&o.run.Cleanup, "cleanup", false, "delete the objects this run created when it ends")
	fs.BoolVar(&o.run.NoAfterChecks, "no-after-checks", false, "skip the after-load checks (b) and (c), which read every object back")
	fs.BoolVar(&o.run.SequentialProbe, "sequential-probe", false, "instead of the load, send one wildcard partial LIST per resource, then check (b)")
	fs.IntVar(&o.run.DeathThreshold, "death-threshold", d.DeathThreshold, "transport errors in a row (after successes) that trigger the server-death check")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON on stdout")
	fs.BoolVar(&o.cleanupOnly, "cleanup-only", false, "delete every object earlier runs left (owned label and prefix), then exit")
}

// Complete fills the hammer options from the flags: resources, clusters,
// lister shapes and the connection.
func (o *options) Complete() error {
	var errs []error
	var err error
	if o.run.Resources, err = hammer.ParseResources(o.resources); err != nil {
		errs = append(errs, fmt.Errorf("--resources: %w", err))
	}
	if o.run.ListerShapes, err = hammer.ParseListerShapes(o.listerShapes); err != nil {
		errs = append(errs, fmt.Errorf("--lister-shapes: %w", err))
	}
	o.run.Scope, o.run.WriteMode = hammer.Scope(o.scope), hammer.WriteMode(o.writeMode)
	o.run.ProbeResourceVersion, o.run.ProbeMetaVersion = o.probeRV, o.probeMeta
	if o.overrides.ClusterInfo.Server == "" && (o.overrides.AuthInfo.Token != "" || o.overrides.ClusterInfo.CertificateAuthority != "" || o.overrides.ClusterInfo.InsecureSkipTLSVerify) && o.rules.ExplicitPath == "" {
		errs = append(errs, errors.New("--token, --certificate-authority and --insecure-skip-tls-verify need --server"))
	}
	if len(errs) == 0 {
		if o.run.Config, err = restConfig(o.rules, o.overrides); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Validate checks the completed options.
func (o *options) Validate() error {
	switch o.progress {
	case "auto", "always", "never":
	default:
		return fmt.Errorf("--progress: %q is not one of auto, always, never", o.progress)
	}
	v := o.run
	if o.cleanupOnly {
		v.SequentialProbe = true // a cleanup needs no workers
	}
	return v.Validate()
}

// parseArgs parses the command line (without the program name); a bad flag
// is an error naming it; -h/--help returns pflag.ErrHelp.
func parseArgs(args []string, stderr io.Writer) (*options, error) {
	o := NewOptions()
	if err := cmdline.Parse("hammer", o, args, usage(), stderr); err != nil {
		return nil, err
	}
	return o, nil
}

// Run runs the hammer (or, with --cleanup-only, the cleanup) and writes the
// report to stdout; it returns the exit code.
func (o *options) Run(ctx context.Context, stdout, stderr io.Writer) int {
	if o.cleanupOnly {
		n, err := hammer.CleanupAll(ctx, o.run)
		fmt.Fprintf(stdout, "hammer: deleted %d objects\n", n)
		if err != nil {
			fmt.Fprintf(stderr, "hammer: cleanup: %v\n", err)
			return hammer.ExitFailure
		}
		return hammer.ExitClean
	}

	opts := o.run
	if f, ok := stderr.(*os.File); o.progress == "always" || (o.progress == "auto" && ok && hammer.IsTerminal(f)) {
		opts.Progress = stderr
		opts.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	}
	rep, err := hammer.Run(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "hammer: %v\n", err)
		return hammer.ExitUsage
	}
	if o.json {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "hammer: writing the report: %v\n", err)
		return hammer.ExitFailure
	}
	return rep.ExitCode
}

// usage is the head of --help; the checks come from hammer.Checks.
func usage() string {
	var b strings.Builder
	b.WriteString(`Usage: hammer [flags]

Hammers a kcp shard (or the kcp-carry test shard) with concurrent wildcard
partial-metadata LISTs and WATCHes plus label writers, and checks that
`)
	checks := checks.List()
	for i, c := range checks {
		end := ","
		if i == len(checks)-1 {
			end = "."
		}
		b.WriteString(wrap(fmt.Sprintf("(%s) %s%s", c.ID, c.What, end), "  ", "      ", 80))
	}
	b.WriteString(usageTail)
	return b.String()
}

// wrap breaks s into lines of at most width columns at spaces, the first
// line indented by first, the others by rest.
func wrap(s, first, rest string, width int) string {
	var b strings.Builder
	line := first
	for i, word := range strings.Fields(s) {
		if i > 0 && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line = rest + word
			continue
		}
		if i > 0 {
			line += " "
		}
		line += word
	}
	b.WriteString(line + "\n")
	return b.String()
}

const usageTail = `Requests go to <server>/clusters/*/... and <server>/clusters/<name>/....

Exit codes: 0 clean, 1 the hammer failed (setup, seeding) or an enabled check saw nothing,
2 usage,
3 the server died, 4 a check failed, 5 the server answered 5xx.

Examples:
  hammer --kubeconfig .kcp/admin.kubeconfig --context shard-base --clusters root
  hammer --server https://127.0.0.1:6443 --insecure-skip-tls-verify --token T \
         --clusters a,b,c --duration 30s --json
  hammer --kubeconfig admin.kubeconfig --context base --sequential-probe
  hammer --kubeconfig admin.kubeconfig --context base --cleanup-only

Flags:
`

// bindConnectionFlags adds clientcmd's kubectl-style connection flags
// (--kubeconfig, --context, --server, --token, --certificate-authority,
// --insecure-skip-tls-verify, --client-certificate, ...) to fs. --namespace
// and --request-timeout are left out: the hammer's flags of those names mean
// the seeded objects' namespace and the timeout of one of its requests.
func bindConnectionFlags(fs *pflag.FlagSet, rules *clientcmd.ClientConfigLoadingRules, overrides *clientcmd.ConfigOverrides) {
	names := clientcmd.RecommendedConfigOverrideFlags("")
	names.ContextOverrideFlags.Namespace.LongName = ""
	names.Timeout.LongName = ""
	names.CurrentContext.Description = "kubeconfig context, e.g. shard-base for kcp's admin.kubeconfig (default: the current context)"
	names.ClusterOverrideFlags.APIServer.Description = "server base URL, e.g. https://127.0.0.1:6443 (overrides the kubeconfig's; a /clusters/<name> suffix is dropped)"
	fs.StringVar(&rules.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config, unless --server is given)")
	clientcmd.BindOverrideFlags(overrides, fs, names)
}

// restConfig builds the connection from a kubeconfig (and context) with the
// flags' overrides, or from the flags alone when --server is given without
// --kubeconfig.
func restConfig(rules *clientcmd.ClientConfigLoadingRules, overrides *clientcmd.ConfigOverrides) (*rest.Config, error) {
	if overrides.ClusterInfo.Server != "" && rules.ExplicitPath == "" {
		cfg, err := clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), overrides).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("--server: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		where := rules.ExplicitPath
		if where == "" {
			where = "the default kubeconfig"
		}
		if overrides.CurrentContext != "" {
			where += " context " + overrides.CurrentContext
		}
		return nil, fmt.Errorf("--kubeconfig/--context: %s: %w", where, err)
	}
	return cfg, nil
}
