package testshard

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigName is the file name of the admin kubeconfig in the root dir.
const KubeconfigName = "admin.kubeconfig"

// writeKubeconfig writes admin.kubeconfig with two contexts, "base" (the
// shard's base URL) and "root" (base URL + /clusters/root, the current
// context), trusting the serving CA. There are no credentials: the shard
// authenticates loopback callers by address. The file is written to a
// temporary name first and renamed, so readers never see half of it.
func writeKubeconfig(dir, baseURL string, caPEM []byte) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["base"] = &clientcmdapi.Cluster{Server: baseURL, CertificateAuthorityData: caPEM}
	cfg.Clusters["root"] = &clientcmdapi.Cluster{Server: baseURL + "/clusters/root", CertificateAuthorityData: caPEM}
	cfg.AuthInfos[AdminUser] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["base"] = &clientcmdapi.Context{Cluster: "base", AuthInfo: AdminUser}
	cfg.Contexts["root"] = &clientcmdapi.Context{Cluster: "root", AuthInfo: AdminUser}
	cfg.CurrentContext = "root"

	path := filepath.Join(dir, KubeconfigName)
	tmp := path + ".tmp"
	if err := clientcmd.WriteToFile(*cfg, tmp); err != nil {
		return "", fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}
