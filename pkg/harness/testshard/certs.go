package testshard

import (
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/util/cert"
)

// servingCerts are the files of the shard's self-signed serving certificate.
type servingCerts struct {
	CAFile   string
	CertFile string
	KeyFile  string
	CAPEM    []byte
}

// writeServingCerts generates a throw-away CA and a serving certificate for
// 127.0.0.1, localhost and ::1 (plus bindIP), signed by it, into dir.
func writeServingCerts(dir string, bindIP net.IP) (*servingCerts, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ips := []net.IP{net.IPv6loopback}
	if bindIP != nil && !bindIP.Equal(net.IPv4(127, 0, 0, 1)) && !bindIP.Equal(net.IPv6loopback) {
		ips = append(ips, bindIP)
	}
	// The chain is the serving certificate followed by the CA that signed it.
	chainPEM, keyPEM, err := cert.GenerateSelfSignedCertKeyWithOptions(cert.SelfSignedCertKeyOptions{
		Host:         "127.0.0.1",
		AlternateIPs: ips,
		AlternateDNS: []string{"localhost"},
		MaxAge:       7 * 24 * time.Hour,
	})
	if err != nil {
		return nil, fmt.Errorf("generating the serving certificate: %w", err)
	}
	chain, err := cert.ParseCertsPEM(chainPEM)
	if err != nil || len(chain) != 2 || !chain[1].IsCA {
		return nil, fmt.Errorf("generated serving chain is not certificate+CA (%d certificates): %v", len(chain), err)
	}

	c := &servingCerts{
		CAFile:   filepath.Join(dir, "ca.crt"),
		CertFile: filepath.Join(dir, "serving.crt"),
		KeyFile:  filepath.Join(dir, "serving.key"),
		CAPEM:    pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: chain[1].Raw}),
	}
	files := []struct {
		path string
		data []byte
	}{
		{c.CAFile, c.CAPEM},
		{c.CertFile, chainPEM},
		{c.KeyFile, keyPEM},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	return c, nil
}
