package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	proxytypes "github.com/kcp-dev/kcp/pkg/server/proxy/types"
)

// The request-header flags every server that trusts the front-proxy takes.
var requestHeaderFlags = []string{
	"--requestheader-username-headers=X-Remote-User",
	"--requestheader-group-headers=X-Remote-Group",
	"--requestheader-extra-headers-prefix=X-Remote-Extra-",
}

func (t *Topology) mkdir(name string) (string, error) {
	dir := filepath.Join(t.opts.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// servingDir makes a server's root directory with its serving certificate.
func (t *Topology) servingDir(name string) (dir string, serving certPair, err error) {
	if dir, err = t.mkdir(name); err != nil {
		return
	}
	serving, err = t.pki.serverCert(dir)
	return
}

// serverFiles is servingDir plus a system:masters client certificate for
// user, what a shard and a virtual-workspaces server present to the servers
// they call.
func (t *Topology) serverFiles(name, user string) (dir string, serving, client certPair, err error) {
	if dir, serving, err = t.servingDir(name); err != nil {
		return
	}
	client, err = t.pki.clientCert(t.pki.clientCA, user, groupMasters)
	return
}

func (t *Topology) cacheClient() kubeconfig {
	return kubeconfig{Name: "cache", Server: loopback(t.ports.cache), CA: t.pki.ServingCAFile,
		Client: certPair{Cert: filepath.Join(t.pki.dir, "cache-client.crt"), Key: filepath.Join(t.pki.dir, "cache-client.key")}}
}

// startCache runs cache-server (sharded-test-server's cache.go), with a
// serving certificate of the topology's CA instead of a self-signed one.
func (t *Topology) startCache(ctx context.Context) error {
	dir, serving, err := t.servingDir("cache-server")
	if err != nil {
		return err
	}
	client := t.cacheClient()
	if _, err := t.pki.clientCert(t.pki.clientCA, "cache-client", groupMasters); err != nil {
		return err
	}
	t.cacheKubeconfig = filepath.Join(dir, "cache.kubeconfig")
	if err := client.write(t.cacheKubeconfig); err != nil {
		return err
	}
	args := []string{
		"--root-directory=" + dir,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(t.ports.cache),
		"--client-ca-file=" + t.pki.ClientCAFile,
		"--tls-cert-file=" + serving.Cert,
		"--tls-private-key-file=" + serving.Key,
		"--embedded-etcd-client-port=" + strconv.Itoa(t.ports.cacheEtcd),
		"--embedded-etcd-peer-port=" + strconv.Itoa(t.ports.cacheEtcdPeer),
	}
	t.Cache, err = t.startComponent(ctx, "cache-server", dir, t.opts.Binaries.CacheServer, args,
		func() (*rest.Config, error) { return client.restConfig(), nil })
	return err
}

// startShard runs `kcp start` for shard i with sharded-test-server's flags
// (shard.go, and test-server's kcp/shard.go for --bind-address) and
// `--shard-run-virtual-workspaces=false`: its virtual workspaces run apart.
func (t *Topology) startShard(ctx context.Context, i int) error {
	if i == 0 {
		if err := t.writeLogicalClusterAdminKubeconfigs(); err != nil {
			return err
		}
	}
	name := fmt.Sprintf("shard-%d", i)
	dir, serving, shardClient, err := t.serverFiles(name, "kcp-shard-"+strconv.Itoa(i))
	if err != nil {
		return err
	}
	args := []string{"start",
		"--shard-name=" + ShardName(i),
		"--root-directory=" + dir,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(t.ports.shard[i]),
		"--embedded-etcd-client-port=" + strconv.Itoa(t.ports.shardEtcd[i]),
		"--embedded-etcd-peer-port=" + strconv.Itoa(t.ports.shardEtcdPeer[i]),
		"--client-ca-file=" + t.pki.ClientCAFile,
		"--requestheader-client-ca-file=" + t.pki.RequestHeaderCAFile,
		"--service-account-key-file=" + t.pki.ServiceAccountCert,
		"--service-account-private-key-file=" + t.pki.ServiceAccountKey,
		"--service-account-signing-key-file=" + t.pki.ServiceAccountKey,
		"--shard-external-url=" + loopback(t.ports.frontProxy),
		"--tls-cert-file=" + serving.Cert,
		"--tls-private-key-file=" + serving.Key,
		"--logical-cluster-admin-kubeconfig=" + filepath.Join(t.pki.dir, "logical-cluster-admin.kubeconfig"),
		"--external-logical-cluster-admin-kubeconfig=" + filepath.Join(t.pki.dir, "external-logical-cluster-admin.kubeconfig"),
		"--shard-client-cert-file=" + shardClient.Cert,
		"--shard-client-key-file=" + shardClient.Key,
		"--shard-virtual-workspace-ca-file=" + t.pki.ServingCAFile,
		"--mount-proxy-client-cert-file=" + t.pki.MountsProxy.Cert,
		"--mount-proxy-client-key-file=" + t.pki.MountsProxy.Key,
		"--cache-kubeconfig=" + t.cacheKubeconfig,
		"--run-virtual-workspaces=false",
		"--shard-virtual-workspace-url=" + loopback(t.ports.virtualWorkspaces[i]),
	}
	args = append(args, requestHeaderFlags...)
	if i > 0 {
		args = append(args, "--root-shard-kubeconfig-file="+filepath.Join(t.Shards[0].Dir, "admin.kubeconfig"))
	}
	args = append(args, t.opts.ShardArgs...)
	c, err := t.startComponent(ctx, name, dir, t.opts.Binaries.KCP, args,
		func() (*rest.Config, error) { return t.shardAdmin(dir, loopback(t.ports.shard[i])) })
	if err != nil {
		return err
	}
	t.Shards = append(t.Shards, c)
	return nil
}

// shardAdmin is the shard admin of a shard's admin.kubeconfig at url,
// trusting the topology's serving CA (kcp writes its own view of the CA).
func (t *Topology) shardAdmin(dir, url string) (*rest.Config, error) {
	cfg, err := contextConfig(filepath.Join(dir, "admin.kubeconfig"), "shard-base", url)
	if err != nil {
		return nil, err
	}
	cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile = nil, t.pki.ServingCAFile
	return cfg, nil
}

// writeLogicalClusterAdminKubeconfigs writes the kubeconfigs every shard is
// given for the (external) logical cluster admin: the root shard directly,
// and the front-proxy.
func (t *Topology) writeLogicalClusterAdminKubeconfigs() error {
	if err := (kubeconfig{Name: "base", Server: loopback(t.ports.shard[0]), CA: t.pki.ServingCAFile, Client: t.pki.LogicalClusterAdmin}).
		write(filepath.Join(t.pki.dir, "logical-cluster-admin.kubeconfig")); err != nil {
		return err
	}
	return kubeconfig{Name: "base", Server: loopback(t.ports.frontProxy), CA: t.pki.ServingCAFile, Client: t.pki.ExternalLogicalClusterAdmin}.
		write(filepath.Join(t.pki.dir, "external-logical-cluster-admin.kubeconfig"))
}

// startVirtualWorkspaces runs shard i's standalone virtual-workspaces server
// (sharded-test-server's virtual.go, without its audit log).
func (t *Topology) startVirtualWorkspaces(ctx context.Context, i int) error {
	name := fmt.Sprintf("vw-%d", i)
	dir, serving, client, err := t.serverFiles(name, "kcp-vw-"+strconv.Itoa(i))
	if err != nil {
		return err
	}
	toShard := kubeconfig{Name: "shard", Server: t.Shards[i].URL(), CA: t.pki.ServingCAFile, Client: client}
	toShardPath := filepath.Join(dir, "virtualworkspace.kubeconfig")
	if err := toShard.write(toShardPath); err != nil {
		return err
	}
	external := kubeconfig{Name: "front-proxy", Server: loopback(t.ports.frontProxy), CA: t.pki.ServingCAFile, Client: t.pki.KCPAdmin}
	externalPath := filepath.Join(dir, "virtualworkspace-external-logical-cluster-admin.kubeconfig")
	if err := external.write(externalPath); err != nil {
		return err
	}
	port := t.ports.virtualWorkspaces[i]
	args := []string{
		"--kubeconfig=" + toShardPath,
		"--external-logical-cluster-admin-kubeconfig=" + externalPath,
		"--cache-kubeconfig=" + t.cacheKubeconfig,
		"--authentication-kubeconfig=" + filepath.Join(t.Shards[i].Dir, "admin.kubeconfig"),
		"--client-ca-file=" + t.pki.ClientCAFile,
		"--tls-cert-file=" + serving.Cert,
		"--tls-private-key-file=" + serving.Key,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--authentication-skip-lookup",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-client-ca-file=" + t.pki.RequestHeaderCAFile,
	}
	ready := toShard
	ready.Server = loopback(port)
	c, err := t.startComponent(ctx, name, dir, t.opts.Binaries.VirtualWorkspaces, args,
		func() (*rest.Config, error) { return ready.restConfig(), nil })
	if err != nil {
		return err
	}
	t.VirtualWorkspaces = append(t.VirtualWorkspaces, c)
	return nil
}

// startFrontProxy runs kcp-front-proxy (sharded-test-server's frontproxy.go):
// /clusters/ maps to the root shard, which the proxy asks for the shards
// and where each workspace lives.
func (t *Topology) startFrontProxy(ctx context.Context) error {
	dir, serving, err := t.servingDir("front-proxy")
	if err != nil {
		return err
	}
	mappings := []proxytypes.PathMapping{{
		Path:            "/clusters/",
		Backend:         t.Shards[0].URL(),
		BackendServerCA: t.pki.ServingCAFile,
		ProxyClientCert: t.pki.FrontProxyRequestHeader.Cert,
		ProxyClientKey:  t.pki.FrontProxyRequestHeader.Key,
	}}
	mappingYAML, err := yaml.Marshal(mappings)
	if err != nil {
		return err
	}
	mappingPath := filepath.Join(dir, "mapping.yaml")
	if err := os.WriteFile(mappingPath, mappingYAML, 0o644); err != nil {
		return err
	}
	rootPath := filepath.Join(dir, "root.kubeconfig")
	if err := t.writeRootKubeconfig(rootPath); err != nil {
		return err
	}
	// The proxy fills in each shard's address.
	shardsPath := filepath.Join(dir, "shards.kubeconfig")
	if err := (kubeconfig{Name: "base", CA: t.pki.ServingCAFile, Client: t.pki.ShardAdmin}).write(shardsPath); err != nil {
		return err
	}
	admin := t.frontProxyKubeconfig()
	admin.Extra = map[string]string{"root": admin.Server + "/clusters/root"}
	t.adminKubeconfig = filepath.Join(t.opts.Dir, "admin.kubeconfig")
	if err := admin.write(t.adminKubeconfig); err != nil {
		return err
	}
	args := []string{
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(t.ports.frontProxy),
		"--mapping-file=" + mappingPath,
		"--root-directory=" + dir,
		"--root-kubeconfig=" + rootPath,
		"--shards-kubeconfig=" + shardsPath,
		"--client-ca-file=" + t.pki.ClientCAFile,
		"--requestheader-client-ca-file=" + t.pki.RequestHeaderCAFile,
		"--requestheader-allowed-names=kcp-front-proxy,kcp-mounts-proxy",
		"--tls-cert-file=" + serving.Cert,
		"--tls-private-key-file=" + serving.Key,
	}
	args = append(args, requestHeaderFlags...)
	t.FrontProxy, err = t.startComponent(ctx, "front-proxy", dir, t.opts.Binaries.FrontProxy, args,
		func() (*rest.Config, error) { return admin.restConfig(), nil })
	return err
}

// writeRootKubeconfig writes the root shard's admin (context shard-base of
// its admin.kubeconfig) alone, at the root shard's address: the proxy's
// --root-kubeconfig.
func (t *Topology) writeRootKubeconfig(path string) error {
	src := filepath.Join(t.Shards[0].Dir, "admin.kubeconfig")
	raw, err := clientcmd.LoadFromFile(src)
	if err != nil {
		return fmt.Errorf("reading %s: %w", src, err)
	}
	raw.CurrentContext = "shard-base"
	if err := clientcmdapi.MinifyConfig(raw); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	for _, c := range raw.Clusters {
		c.Server = t.Shards[0].URL()
		c.CertificateAuthorityData, c.CertificateAuthority = nil, t.pki.ServingCAFile
	}
	return clientcmd.WriteToFile(*raw, path)
}
