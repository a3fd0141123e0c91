package server

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kcp-dev/sdk/testing/third_party/library-go/crypto"
)

// Groups kcp's authorizers know (github.com/kcp-dev/kcp
// pkg/authorization/bootstrap/policy.go); spelled out here because importing
// that package links most of kcp.
const (
	groupKCPAdmin                    = "system:kcp:admin"
	groupLogicalClusterAdmin         = "system:kcp:logical-cluster-admin"
	groupExternalLogicalClusterAdmin = "system:kcp:external-logical-cluster-admin"
	groupMasters                     = "system:masters"
)

// certDays is the lifetime of every certificate: the topology lives for a test.
const certDays = 7

// pki is the topology's certificate layout, the one kcp's
// cmd/sharded-test-server writes (main.go): a request-header CA for the
// front-proxy's (and the mount proxy's) identity towards the shards, a client
// CA for every user and server client, a serving CA for every server, and a
// service-account signing key.
type pki struct {
	dir string

	requestHeaderCA *crypto.CA
	clientCA        *crypto.CA
	servingCA       *crypto.CA

	RequestHeaderCAFile string
	ClientCAFile        string
	ServingCAFile       string
	ServiceAccountCert  string
	ServiceAccountKey   string

	// Client certificates: the front-proxy towards the shards (request
	// header), the shards' mount proxy, kcp-admin, the (external) logical
	// cluster admins and the front-proxy's shard admin.
	FrontProxyRequestHeader     certPair
	MountsProxy                 certPair
	KCPAdmin                    certPair
	LogicalClusterAdmin         certPair
	ExternalLogicalClusterAdmin certPair
	ShardAdmin                  certPair
}

type certPair struct{ Cert, Key string }

func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{dir: dir}
	var err error
	ca := func(name string) (*crypto.CA, string, error) {
		crt := filepath.Join(dir, name+".crt")
		c, _, err := crypto.EnsureCA(crt, filepath.Join(dir, name+".key"), filepath.Join(dir, name+"-serial.txt"), "kcp-carry-"+name, certDays)
		if err != nil {
			return nil, "", fmt.Errorf("creating the %s in %s: %w", name, dir, err)
		}
		return c, crt, nil
	}
	if p.requestHeaderCA, p.RequestHeaderCAFile, err = ca("requestheader-ca"); err != nil {
		return nil, err
	}
	if p.clientCA, p.ClientCAFile, err = ca("client-ca"); err != nil {
		return nil, err
	}
	if p.servingCA, p.ServingCAFile, err = ca("serving-ca"); err != nil {
		return nil, err
	}
	// The service-account key pair is a CA's key pair, as sharded-test-server makes it.
	if _, p.ServiceAccountCert, err = ca("service-account"); err != nil {
		return nil, err
	}
	p.ServiceAccountKey = filepath.Join(dir, "service-account.key")

	clients := []struct {
		pair   *certPair
		ca     *crypto.CA
		name   string
		groups []string
	}{
		// CNs the front-proxy's --requestheader-allowed-names lists.
		{&p.FrontProxyRequestHeader, p.requestHeaderCA, "kcp-front-proxy", nil},
		{&p.MountsProxy, p.requestHeaderCA, "kcp-mounts-proxy", nil},
		{&p.KCPAdmin, p.clientCA, "kcp-admin", []string{groupKCPAdmin}},
		{&p.LogicalClusterAdmin, p.clientCA, "logical-cluster-admin", []string{groupLogicalClusterAdmin}},
		{&p.ExternalLogicalClusterAdmin, p.clientCA, "external-logical-cluster-admin", []string{groupExternalLogicalClusterAdmin}},
		// The front-proxy lists shards and sends wildcard requests to them.
		{&p.ShardAdmin, p.clientCA, "shard-admin", []string{user.SystemPrivilegedGroup}},
	}
	for _, c := range clients {
		if *c.pair, err = p.clientCert(c.ca, c.name, c.groups...); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// clientCert writes a client certificate for user name in groups, signed by ca.
func (p *pki) clientCert(ca *crypto.CA, name string, groups ...string) (certPair, error) {
	pair := certPair{Cert: filepath.Join(p.dir, name+".crt"), Key: filepath.Join(p.dir, name+".key")}
	if _, err := ca.MakeClientCertificate(pair.Cert, pair.Key, &user.DefaultInfo{Name: name, Groups: groups}, certDays); err != nil {
		return certPair{}, fmt.Errorf("creating the client certificate of %s in %s: %w", name, p.dir, err)
	}
	return pair, nil
}

// serverCert writes a serving certificate for 127.0.0.1 and localhost into
// dir, signed by the serving CA.
func (p *pki) serverCert(dir string) (certPair, error) {
	pair := certPair{Cert: filepath.Join(dir, "apiserver.crt"), Key: filepath.Join(dir, "apiserver.key")}
	cert, err := p.servingCA.MakeServerCert(sets.New("localhost", "127.0.0.1"), certDays)
	if err != nil {
		return certPair{}, fmt.Errorf("creating a serving certificate for %s: %w", dir, err)
	}
	if err := cert.WriteCertConfigFile(pair.Cert, pair.Key); err != nil {
		return certPair{}, fmt.Errorf("writing the serving certificate of %s: %w", dir, err)
	}
	return pair, nil
}
