// Package kcpe2e runs kcp's own end-to-end tests, compiled from a kcp source
// tree with the tree's own go.mod, against a kcp binary started the way kcp's
// e2e framework expects of an external server (kcp's Makefile,
// test-e2e-shared-minimal): a client CA in the root directory, the sdk's
// testing/auth-tokens.csv, the tree's TEST_FEATURE_GATES, kcp's default
// batteries, loopback only. It reports pass, fail and skip counts per package.
package kcpe2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// AuthTokensFile is the token file kcp's test servers run with, in a kcp tree.
const AuthTokensFile = "staging/src/github.com/kcp-dev/sdk/testing/auth-tokens.csv"

// ServerOptions say which kcp to start for kcp's e2e tests.
type ServerOptions struct {
	// Binary is the kcp binary, RootDir its --root-directory (created).
	Binary, RootDir string
	// Tree is the kcp source tree the tests come from: the token file and
	// the feature gates are read from it.
	Tree string
	// Env are extra environment variables for kcp, and Args extra flags
	// (--watch-cache=false, say).
	Env  []string
	Args []string
	// ReadyTimeout bounds the wait for kcp's /readyz (default
	// server.KCPReadyTimeout); a race build starts several times slower.
	ReadyTimeout time.Duration
	Progress     func(format string, args ...any)
}

// StartServer writes the client CA (RootDir/client-ca.crt and .key, where
// kcp's framework looks for it next to admin.kubeconfig to sign client
// certificates) and the token file into RootDir, and starts kcp with them.
func StartServer(ctx context.Context, o ServerOptions) (*server.KCP, error) {
	gates, err := FeatureGates(o.Tree)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.RootDir, 0o755); err != nil {
		return nil, err
	}
	caFile, err := writeClientCA(o.RootDir)
	if err != nil {
		return nil, err
	}
	tokens, err := os.ReadFile(filepath.Join(o.Tree, AuthTokensFile))
	if err != nil {
		return nil, fmt.Errorf("kcp tree %s: reading its e2e token file: %w", o.Tree, err)
	}
	tokensFile := filepath.Join(o.RootDir, "auth-tokens.csv")
	if err := os.WriteFile(tokensFile, tokens, 0o600); err != nil {
		return nil, err
	}
	return server.StartKCP(ctx, server.KCPOptions{
		Binary:  o.Binary,
		RootDir: o.RootDir,
		// kcp's test servers run with kcp's default batteries: the
		// organization WorkspaceType the tests create workspaces of is one.
		DefaultBatteries: true,
		Args: append([]string{
			"--client-ca-file=" + caFile,
			"--token-auth-file=" + tokensFile,
			"--feature-gates=" + gates,
		}, o.Args...),
		// As kcp's Makefile runs its e2e servers.
		Env:          append([]string{"UNSAFE_E2E_HACK_DISABLE_ETCD_FSYNC=true"}, o.Env...),
		ReadyTimeout: o.ReadyTimeout,
		Progress:     o.Progress,
	})
}

// FeatureGates is the tree's TEST_FEATURE_GATES, the gates kcp's Makefile
// starts its e2e servers with.
func FeatureGates(tree string) (string, error) {
	path := filepath.Join(tree, "Makefile")
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("kcp tree %s: %w", tree, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), "?=")
		if ok && strings.TrimSpace(name) == "TEST_FEATURE_GATES" {
			return strings.TrimSpace(value), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return "", fmt.Errorf("%s: no TEST_FEATURE_GATES ?= line (the feature gates kcp's e2e servers run with)", path)
}

// writeClientCA writes a self-signed client CA as dir/client-ca.crt and
// dir/client-ca.key and returns the certificate's path.
func writeClientCA(dir string) (string, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	ca, err := cert.NewSelfSignedCACert(cert.Config{CommonName: "kcp-client-ca"}, key)
	if err != nil {
		return "", fmt.Errorf("creating the client CA: %w", err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return "", err
	}
	caPEM, err := cert.EncodeCertificates(ca)
	if err != nil {
		return "", err
	}
	crt := filepath.Join(dir, "client-ca.crt")
	if err := os.WriteFile(crt, caPEM, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "client-ca.key"), keyPEM, 0o600); err != nil {
		return "", err
	}
	return crt, nil
}
