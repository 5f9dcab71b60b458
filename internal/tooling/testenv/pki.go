package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is a throwaway certificate authority with one server and one client
// certificate, written as ca.crt, tls.crt and tls.key into ServerDir and
// ClientDir: the layout Crossplane core and function-sdk-go read. Core
// always dials functions with mutual TLS.
type PKI struct {
	ServerDir string
	ClientDir string

	CA, ServerCert, ServerKey, ClientCert, ClientKey []byte
}

// NewPKI writes a CA, a server certificate for 127.0.0.1 and localhost, and
// a client certificate under dir.
func NewPKI(dir string) (*PKI, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "xplocal-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) ([]byte, []byte, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			DNSNames:     []string{"localhost", cn},
			IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), nil
	}
	p := &PKI{
		ServerDir: filepath.Join(dir, "server"),
		ClientDir: filepath.Join(dir, "client"),
		CA:        pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
	}
	if p.ServerCert, p.ServerKey, err = leaf(2, "function", x509.ExtKeyUsageServerAuth); err != nil {
		return nil, err
	}
	if p.ClientCert, p.ClientKey, err = leaf(3, "crossplane", x509.ExtKeyUsageClientAuth); err != nil {
		return nil, err
	}
	for d, pair := range map[string][2][]byte{p.ServerDir: {p.ServerCert, p.ServerKey}, p.ClientDir: {p.ClientCert, p.ClientKey}} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		for name, b := range map[string][]byte{"ca.crt": p.CA, "tls.crt": pair[0], "tls.key": pair[1]} {
			if err := os.WriteFile(filepath.Join(d, name), b, 0o600); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}
