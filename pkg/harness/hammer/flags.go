package hammer

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// CLI is a parsed hammer command line.
type CLI struct {
	Options     Options
	JSON        bool // print the report as JSON
	CleanupOnly bool // delete what earlier runs left, then exit
	Progress    string
}

// ErrHelp is returned by ParseArgs for -h/--help (usage was printed).
var ErrHelp = flag.ErrHelp

const usageHead = `Usage: hammer [flags]

Hammers a kcp shard (or the kcp-carry test shard) with concurrent wildcard
partial-metadata LISTs and WATCHes plus label writers, and checks that
  (a) every wildcard partial item carries kcp.io/original-api-version equal to
      the served group/version,
  (b) afterwards no full-object LIST or GET (watch cache or etcd) shows
      kcp.io/original-api-version,
  (c) every object's label equals its last successful write,
  (d) with --mixed-watchers: wildcard and single-cluster partial-metadata
      watches of the same resource, open at the same time, each get their own
      answer (wildcard events carry the served group/version, single-cluster
      events no kcp.io/original-api-version).
Requests go to <server>/clusters/*/... and <server>/clusters/<name>/....

Exit codes: 0 clean, 1 the hammer failed (setup, seeding), 2 usage,
3 the server died, 4 a check failed, 5 the server answered 5xx.

Examples:
  hammer --kubeconfig .kcp/admin.kubeconfig --context shard-base --clusters root
  hammer --server https://127.0.0.1:6443 --insecure-skip-tls-verify --token T \
         --clusters a,b,c --duration 30s --json
  hammer --kubeconfig admin.kubeconfig --context base --sequential-probe
  hammer --kubeconfig admin.kubeconfig --context base --cleanup-only

Flags:
`

// ParseArgs parses the hammer's command line (without the program name) into
// options. Usage and errors go to stderr; a bad flag is an error naming it.
func ParseArgs(args []string, stderr io.Writer) (*CLI, error) {
	d := DefaultOptions()
	fs := flag.NewFlagSet("hammer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageHead)
		fs.PrintDefaults()
	}
	var (
		rules     = clientcmd.NewDefaultClientConfigLoadingRules()
		overrides = &clientcmd.ConfigOverrides{}
	)
	bindConnectionFlags(fs, rules, overrides)
	var (
		resources = fs.String("resources", "clusterroles,configmaps", "resources to seed, list, watch and write: clusterroles (rbac.authorization.k8s.io/v1), configmaps (v1)")
		clusters  = fs.String("clusters", strings.Join(d.Clusters, ","), "logical clusters to seed and write in, comma-separated")
		variants  = fs.String("lister-variants", "", "lister variants, cycled over the listers: <v1|v1beta1|kcp>:<rv>[:paged] with rv empty or 0, kcp = kcp's metadata client (default: a mix starting with kcp:0)")
		scope     = fs.String("scope", string(d.Scope), "where listers and watchers go: wildcard (/clusters/*) or cluster (/clusters/<name>, a control)")
		writeMode = fs.String("write-mode", string(d.WriteMode), "how writers set the label: update (GET+PUT), patch (merge PATCH), mixed")
		progress  = fs.String("progress", "auto", "live progress line on stderr: auto (when stderr is a terminal), always, never")
		probeRV   = fs.String("probe-rv", d.ProbeResourceVersion, `resourceVersion of the --sequential-probe LIST: "0" or ""`)
		probeMeta = fs.String("probe-meta-version", d.ProbeMetaVersion, "meta.k8s.io version of the --sequential-probe LIST: v1 or v1beta1")
	)
	o := d
	fs.StringVar(&o.Namespace, "namespace", d.Namespace, "namespace of namespaced objects (created when missing)")
	fs.IntVar(&o.Objects, "objects", d.Objects, "objects per logical cluster and resource")
	fs.StringVar(&o.Prefix, "prefix", d.Prefix, "name prefix of seeded objects")
	fs.IntVar(&o.Annotations, "annotations", d.Annotations, "extra annotations on each seeded object (besides its note)")
	fs.IntVar(&o.Listers, "listers", d.Listers, "concurrent wildcard partial-metadata listers")
	fs.Int64Var(&o.PageSize, "page-size", d.PageSize, "limit of paginated listers")
	fs.IntVar(&o.Watchers, "watchers", d.Watchers, "concurrent wildcard partial-metadata watchers")
	fs.DurationVar(&o.WatchWindow, "watch-window", d.WatchWindow, "how long each watch stays open")
	fs.IntVar(&o.Writers, "writers", d.Writers, "concurrent label writers")
	fs.IntVar(&o.MixedWatchers, "mixed-watchers", d.MixedWatchers, "groups of mixed watchers for check (d): each keeps a wildcard and a single-cluster partial-metadata watch of one resource open at once (meta.k8s.io v1 and v1beta1), window after window")
	fs.DurationVar(&o.Duration, "duration", d.Duration, "bound of the load")
	fs.Int64Var(&o.MaxRequests, "max-requests", d.MaxRequests, "request budget of the load (all workers)")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", d.RequestTimeout, "timeout of one request")
	fs.DurationVar(&o.SyncTimeout, "sync-timeout", d.SyncTimeout, "how long to wait for the watch cache to show the seeded objects")
	fs.BoolVar(&o.NoSeed, "no-seed", false, "do not create missing objects")
	fs.BoolVar(&o.Cleanup, "cleanup", false, "delete the objects this run created when it ends")
	fs.BoolVar(&o.NoVerify, "no-verify", false, "skip checks (b) and (c) after the load")
	fs.BoolVar(&o.SequentialProbe, "sequential-probe", false, "instead of the load, send one wildcard partial LIST per resource, then check (b)")
	fs.IntVar(&o.DeathThreshold, "death-threshold", d.DeathThreshold, "transport errors in a row (after successes) that trigger the server-death check")
	cli := &CLI{}
	fs.BoolVar(&cli.JSON, "json", false, "print the report as JSON on stdout")
	fs.BoolVar(&cli.CleanupOnly, "cleanup-only", false, "delete every object earlier runs left (owned label and prefix), then exit")

	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var errs []error
	var err error
	if o.Resources, err = ParseResources(*resources); err != nil {
		errs = append(errs, fmt.Errorf("--resources: %w", err))
	}
	o.Clusters = splitList(*clusters)
	if o.ListerVariants, err = ParseListerVariants(*variants); err != nil {
		errs = append(errs, fmt.Errorf("--lister-variants: %w", err))
	}
	o.Scope, o.WriteMode = Scope(*scope), WriteMode(*writeMode)
	o.ProbeResourceVersion, o.ProbeMetaVersion = *probeRV, *probeMeta
	switch *progress {
	case "auto", "always", "never":
		cli.Progress = *progress
	default:
		errs = append(errs, fmt.Errorf("--progress: %q is not one of auto, always, never", *progress))
	}
	if overrides.ClusterInfo.Server == "" && (overrides.AuthInfo.Token != "" || overrides.ClusterInfo.CertificateAuthority != "" || overrides.ClusterInfo.InsecureSkipTLSVerify) && rules.ExplicitPath == "" {
		errs = append(errs, errors.New("--token, --certificate-authority and --insecure-skip-tls-verify need --server"))
	}
	if len(errs) == 0 {
		o.Config, err = restConfig(rules, overrides)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		v := o
		if cli.CleanupOnly {
			v.SequentialProbe = true // a cleanup needs no workers
		}
		if err := v.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cli.Options = o
	return cli, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// bindConnectionFlags adds clientcmd's kubectl-style connection flags
// (--kubeconfig, --context, --server, --token, --certificate-authority,
// --insecure-skip-tls-verify, --client-certificate, ...) to fs. --namespace
// and --request-timeout are left out: the hammer's flags of those names mean
// the seeded objects' namespace and the timeout of one of its requests.
func bindConnectionFlags(fs *flag.FlagSet, rules *clientcmd.ClientConfigLoadingRules, overrides *clientcmd.ConfigOverrides) {
	names := clientcmd.RecommendedConfigOverrideFlags("")
	names.ContextOverrideFlags.Namespace.LongName = ""
	names.Timeout.LongName = ""
	names.CurrentContext.Description = "kubeconfig context, e.g. shard-base for kcp's admin.kubeconfig (default: the current context)"
	names.ClusterOverrideFlags.APIServer.Description = "server base URL, e.g. https://127.0.0.1:6443 (overrides the kubeconfig's; a /clusters/<name> suffix is dropped)"
	pfs := pflag.NewFlagSet("hammer", pflag.ContinueOnError)
	pfs.StringVar(&rules.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config, unless --server is given)")
	clientcmd.BindOverrideFlags(overrides, pfs, names)
	// pflag values are flag.Values (bools included), so the hammer keeps one
	// standard-library flag set.
	pfs.VisitAll(func(f *pflag.Flag) { fs.Var(f.Value, f.Name, f.Usage) })
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
