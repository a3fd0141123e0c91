package testshard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	generatedopenapi "k8s.io/kubernetes/pkg/generated/openapi"

	"github.com/kcp-carry/kcp-carry/pkg/harness/cachemutation"
)

const (
	// readyTimeout bounds the wait for /readyz after the server started serving.
	readyTimeout = 2 * time.Minute
	// etcdStopTimeout bounds the wait for the embedded etcd to close.
	etcdStopTimeout = 30 * time.Second
)

// Run starts the test shard and serves until ctx is cancelled. It returns nil
// after a clean shutdown. When the root dir was created by Run it is removed
// on return unless o.KeepRootDir is set.
func Run(ctx context.Context, o Options) (retErr error) {
	if err := o.Validate(); err != nil {
		return err
	}
	bindIP, _ := loopbackIP(o.BindAddress)
	logger := klog.FromContext(ctx).WithName("testshard")

	rootDir, removeRootDir, err := prepareRootDir(o)
	if err != nil {
		return err
	}
	defer func() {
		if err := removeRootDir(); err != nil && retErr == nil {
			retErr = err
		}
	}()

	// etcd outlives the API server: it is stopped (and waited for) only after
	// the server has shut down, and before the root dir is removed.
	etcdCtx, stopEtcd := context.WithCancel(context.WithoutCancel(ctx))
	etcdOpts := newEtcdOptions(o.WatchCache)
	logger.Info("starting embedded etcd", "dir", filepath.Join(rootDir, "etcd-server"))
	etcd, err := startEtcd(etcdCtx, rootDir, etcdOpts, o.WatchCache, o.EtcdUnsafeNoFsync)
	defer func() {
		stopEtcd()
		if etcd == nil {
			return
		}
		if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, etcdStopTimeout, true, func(context.Context) (bool, error) {
			return etcd.Stopped(), nil
		}); err != nil {
			logger.Error(err, "embedded etcd did not stop in time", "timeout", etcdStopTimeout)
		}
	}()
	if err != nil {
		return err
	}

	certs, err := writeServingCerts(filepath.Join(rootDir, "certs"), bindIP)
	if err != nil {
		return fmt.Errorf("serving certificates in %s: %w", rootDir, err)
	}

	listener, err := net.Listen("tcp", net.JoinHostPort(bindIP.String(), strconv.Itoa(o.SecurePort)))
	if err != nil {
		return fmt.Errorf("--bind-address %s --secure-port %d: %w", bindIP, o.SecurePort, err)
	}
	addr := listener.Addr().(*net.TCPAddr)
	baseURL := "https://" + net.JoinHostPort(addr.IP.String(), strconv.Itoa(addr.Port))

	detector := newCacheMutationDetector(o)
	defer detector.Stop()
	server, err := newServer(etcdOpts, listener, certs, detector)
	if err != nil {
		_ = listener.Close()
		return err
	}
	loopback := rest.CopyConfig(server.LoopbackClientConfig)

	serverCtx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	serverDone := make(chan struct{})
	var serverErr error
	go func() {
		defer close(serverDone)
		serverErr = server.PrepareRun().RunWithContext(serverCtx)
	}()
	// On any early return: stop the server and wait for it.
	stopAndWait := func() {
		stopServer()
		<-serverDone
	}

	if err := waitReady(serverCtx, loopback, serverDone); err != nil {
		stopAndWait()
		if serverErr != nil {
			return fmt.Errorf("%w (server: %v)", err, serverErr)
		}
		return err
	}

	kubeconfig, err := writeKubeconfig(rootDir, baseURL, certs.CAPEM)
	if err != nil {
		stopAndWait()
		return err
	}
	ready := Ready{
		URL:        baseURL,
		Kubeconfig: kubeconfig,
		CAFile:     certs.CAFile,
		RootDir:    rootDir,
		WatchCache: o.WatchCache,
		PID:        os.Getpid(),

		CacheMutationDetector: detector != nil,
	}
	logger.Info("test shard ready (a test shard built from kcp's fork, not kcp)", "url", baseURL, "kubeconfig", kubeconfig, "watchCache", o.WatchCache, "cacheMutationDetector", detector != nil)
	if o.OnReady != nil {
		o.OnReady(ready)
	}

	<-serverDone
	logger.Info("test shard stopped", "err", serverErr)
	return serverErr
}

// newServer assembles the generic API server: storage, registries, OpenAPI
// v3 (server-side apply needs it), loopback-only authentication, AlwaysAllow
// authorization and kcp's filters; with a detector, its storage decorator
// around every registry's storage and its request filter outermost.
func newServer(etcdOpts *genericoptions.EtcdOptions, listener net.Listener, certs *servingCerts, detector *cachemutation.Detector) (*genericapiserver.GenericAPIServer, error) {
	config := genericapiserver.NewRecommendedConfig(legacyscheme.Codecs)
	config.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	config.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, openapinamer.NewDefinitionNamer(legacyscheme.Scheme))
	config.OpenAPIV3Config.Info.Title = "kcp-carry test shard (built from kcp's fork, not kcp)"

	serving := genericoptions.NewSecureServingOptions()
	serving.Listener = listener
	serving.ServerCert.CertKey.CertFile = certs.CertFile
	serving.ServerCert.CertKey.KeyFile = certs.KeyFile
	if err := serving.WithLoopback().ApplyTo(&config.SecureServing, &config.LoopbackClientConfig); err != nil {
		return nil, fmt.Errorf("secure serving: %w", err)
	}
	config.ExternalAddress = listener.Addr().String()

	config.Authentication.Authenticator = loopbackAdmin
	config.Authorization.Authorizer = alwaysAllow()
	config.BuildHandlerChainFunc = buildHandlerChain
	if detector != nil {
		config.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
			return detector.WithRequest(buildHandlerChain(h, c))
		}
	}

	if err := etcdOpts.ApplyTo(&config.Config); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}

	server, err := config.Complete().New("kcp-carry-test-shard", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("generic API server: %w", err)
	}
	legacy, rbac, err := apiGroups(detector.RESTOptionsGetter(config.RESTOptionsGetter))
	if err != nil {
		return nil, err
	}
	if err := server.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, legacy); err != nil {
		return nil, fmt.Errorf("installing /api: %w", err)
	}
	if err := server.InstallAPIGroup(rbac); err != nil {
		return nil, fmt.Errorf("installing rbac.authorization.k8s.io: %w", err)
	}
	return server, nil
}

// waitReady polls /readyz through the loopback client until it answers ok,
// the server stops, or readyTimeout passes.
func waitReady(ctx context.Context, loopback *rest.Config, serverDone <-chan struct{}) error {
	client, err := kubernetes.NewForConfig(loopback)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var last error
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-serverDone:
			return false, errors.New("test shard stopped before it was ready")
		default:
		}
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			last = fmt.Errorf("%w: %s", err, body)
			return false, nil
		}
		return true, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("test shard not ready after %s: %w (last /readyz: %v)", readyTimeout, err, last)
	}
	return err
}

// prepareRootDir returns the root dir and a func that removes it if Run
// created it (and was not asked to keep it).
func prepareRootDir(o Options) (string, func() error, error) {
	noop := func() error { return nil }
	if o.RootDir != "" {
		if err := os.MkdirAll(o.RootDir, 0o700); err != nil {
			return "", noop, fmt.Errorf("--root-dir %s: %w", o.RootDir, err)
		}
		return o.RootDir, noop, nil
	}
	dir, err := os.MkdirTemp("", "kcp-carry-testshard-")
	if err != nil {
		return "", noop, fmt.Errorf("temporary root dir: %w", err)
	}
	if o.KeepRootDir {
		return dir, noop, nil
	}
	return dir, func() error { return os.RemoveAll(dir) }, nil
}

// newCacheMutationDetector returns the detector when o turns it on, else
// nil (nothing is wrapped). Findings go to stderr as
// cachemutation.FormatLine lines, for the fixture, besides the detector's
// own log line and metric.
func newCacheMutationDetector(o Options) *cachemutation.Detector {
	if !o.cacheMutationDetector() {
		return nil
	}
	klog.InfoS("Cache mutation detector on: a debugging aid that fingerprints every object reads hand out and reports read-path writes into the watch cache", "interval", o.CacheMutationDetectorInterval)
	return cachemutation.New(cachemutation.Options{
		Interval: o.CacheMutationDetectorInterval,
		Cluster:  func(m metav1.Object) string { return logicalcluster.From(m).String() },
		OnFinding: func(f cachemutation.Finding) {
			_, _ = os.Stderr.WriteString(cachemutation.FormatLine(f))
		},
	})
}
