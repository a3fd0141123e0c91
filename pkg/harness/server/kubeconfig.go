package server

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfig is one cluster, one user, one context, named name.
type kubeconfig struct {
	Name   string
	Server string
	CA     string
	// Either a client certificate or nothing (the file is then only a
	// server address and CA).
	Client certPair
	// Extra contexts on the same user: context name -> server.
	Extra map[string]string
}

// write writes k to path as a kubeconfig with paths to the files (no data
// inlined), current context k.Name.
func (k kubeconfig) write(path string) error {
	cfg := clientcmdapi.NewConfig()
	add := func(name, server string) {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: k.CA}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: k.Name}
	}
	add(k.Name, k.Server)
	for name, server := range k.Extra {
		add(name, server)
	}
	cfg.AuthInfos[k.Name] = &clientcmdapi.AuthInfo{ClientCertificate: k.Client.Cert, ClientKey: k.Client.Key}
	cfg.CurrentContext = k.Name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// restConfig is k as a client config, client-side rate limiting off (the
// hammer and the probes bound their own load).
func (k kubeconfig) restConfig() *rest.Config {
	return &rest.Config{
		Host:            k.Server,
		TLSClientConfig: rest.TLSClientConfig{CAFile: k.CA, CertFile: k.Client.Cert, KeyFile: k.Client.Key},
		QPS:             -1,
		UserAgent:       "kcp-carry",
	}
}

// contextConfig reads context of a kubeconfig kcp wrote and points it at
// host (kcp writes the address it advertises, which may be the front-proxy's,
// or after a restart the previous port), client-side rate limiting off.
func contextConfig(path, context, host string) (*rest.Config, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path},
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("context %s of %s: %w", context, path, err)
	}
	cfg.Host = host
	cfg.QPS = -1
	cfg.UserAgent = "kcp-carry"
	return cfg, nil
}
