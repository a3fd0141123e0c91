package server

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestStartNamesMissingBinary(t *testing.T) {
	bins := TopologyBinariesIn(t.TempDir(), "-pristine")
	_, err := StartTopology(context.Background(), TopologyOptions{Binaries: bins, Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), bins.KCP) || !strings.Contains(err.Error(), "make sharded") {
		t.Errorf("Start without binaries = %v, want an error naming %s and make sharded", err, bins.KCP)
	}
	if _, err := StartTopology(context.Background(), TopologyOptions{Binaries: bins}); err == nil || !strings.Contains(err.Error(), "Dir") {
		t.Errorf("Start without Dir = %v, want an error naming TopologyOptions.Dir", err)
	}
}

func TestPKIAndKubeconfig(t *testing.T) {
	dir := t.TempDir()
	p, err := newPKI(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	serving, err := p.serverCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	leaf := readCert(t, serving.Cert)
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, p.ServingCAFile))
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "127.0.0.1", Roots: roots}); err != nil {
		t.Errorf("the serving certificate does not verify for 127.0.0.1 against the serving CA: %v", err)
	}
	admin := readCert(t, p.KCPAdmin.Cert)
	if admin.Subject.CommonName != "kcp-admin" || len(admin.Subject.Organization) != 1 || admin.Subject.Organization[0] != groupKCPAdmin {
		t.Errorf("kcp-admin's certificate: subject %v", admin.Subject)
	}
	clients := x509.NewCertPool()
	clients.AddCert(readCert(t, p.ClientCAFile))
	if _, err := admin.Verify(x509.VerifyOptions{Roots: clients, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("kcp-admin's certificate does not verify against the client CA: %v", err)
	}

	path := filepath.Join(dir, "k.kubeconfig")
	k := kubeconfig{Name: "base", Server: "https://127.0.0.1:1", CA: p.ServingCAFile, Client: p.KCPAdmin, Extra: map[string]string{"root": "https://127.0.0.1:1/clusters/root"}}
	if err := k.write(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "base" || cfg.Clusters["root"].Server != "https://127.0.0.1:1/clusters/root" || cfg.AuthInfos["base"].ClientCertificate != p.KCPAdmin.Cert {
		t.Errorf("kubeconfig %s: %+v", path, cfg)
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}
