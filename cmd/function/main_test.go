package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
)

func TestFlagsNeedCertificatesUnlessInsecure(t *testing.T) {
	t.Setenv("TLS_SERVER_CERTS_DIR", "")
	if _, err := parseFlags(nil); err == nil || !strings.Contains(err.Error(), "--tls-certs-dir") {
		t.Errorf("no certificates and not insecure: error %v", err)
	}
	if o, err := parseFlags([]string{"--insecure"}); err != nil || !o.insecure {
		t.Errorf("--insecure: %+v, %v", o, err)
	}
	t.Setenv("TLS_SERVER_CERTS_DIR", "/certs")
	if o, err := parseFlags(nil); err != nil || o.certsDir != "/certs" {
		t.Errorf("certificates from the environment, as Crossplane's runtime sets them: %+v, %v", o, err)
	}
}

// TestServesMutualTLS runs the function as Crossplane runs it, with mutual
// TLS, and calls it as Crossplane does: a client with a certificate of the
// same CA composes; a client without one is refused.
func TestServesMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCert(t, nil, nil, "ca", true)
	writePEM(t, filepath.Join(dir, "ca.crt"), "CERTIFICATE", ca.Raw)
	srv, srvKey := newCert(t, ca, caKey, "function", false)
	writePEM(t, filepath.Join(dir, "tls.crt"), "CERTIFICATE", srv.Raw)
	writeKey(t, filepath.Join(dir, "tls.key"), srvKey)
	cli, cliKey := newCert(t, ca, caKey, "crossplane", false)

	sock := filepath.Join(dir, "fn.sock")
	go func() {
		_ = run([]string{"--network", "unix", "--address", sock, "--tls-certs-dir", dir, "--metrics-address", ""})
	}()

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	call := func(certs []tls.Certificate, wait bool) (*fnv1.RunFunctionResponse, error) {
		creds := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: "function", Certificates: certs})
		conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(creds))
		if err != nil {
			return nil, err
		}
		defer func() { _ = conn.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		xr := resource.MustStructJSON(`{"apiVersion": "workload.tencentcloud.crossplane.io/v1alpha1", "kind": "PodPublicAddress",
		 "metadata": {"name": "a", "namespace": "n"}, "spec": {"selector": {"matchLabels": {"app": "a"}},
		 "ports": [{"port": 1, "protocol": "TCP"}], "loadBalancers": {"existingIds": ["lb-a"]}, "portRange": {"start": 1, "end": 9}}}`)
		return fnv1.NewFunctionRunnerServiceClient(conn).RunFunction(ctx,
			&fnv1.RunFunctionRequest{Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: xr}}}, grpc.WaitForReady(wait))
	}

	// The first call waits for the server to listen.
	rsp, err := call([]tls.Certificate{{Certificate: [][]byte{cli.Raw}, PrivateKey: cliKey}}, true)
	if err != nil {
		t.Fatalf("a client with a certificate of the CA: %v", err)
	}
	if n := len(rsp.GetDesired().GetResources()); n != 3 {
		t.Errorf("composed %d resources, want a load balancer, a pool and a policy: %v", n, rsp.GetResults())
	}
	if _, err := call(nil, false); err == nil {
		t.Error("a client without a certificate was served")
	}
}

func newCert(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, cn string, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     []string{cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:         isCA, BasicConstraintsValid: true,
	}
	if parent == nil {
		parent, parentKey = tpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func writeKey(t *testing.T, path string, key *ecdsa.PrivateKey) {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, path, "EC PRIVATE KEY", der)
}
