package testenv

import (
	"os"
	"path/filepath"
)

// ServingCert makes a throwaway CA and a serving certificate for 127.0.0.1
// and localhost (NewPKI, under dir/pki), as Crossplane does for a
// provider's webhook, and writes the certificate and its key as tls.crt and
// tls.key into dir (the layout of WEBHOOK_TLS_CERT_DIR). It returns the CA
// in PEM, a webhook's caBundle.
func ServingCert(dir string) ([]byte, error) {
	p, err := NewPKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), p.ServerCert, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), p.ServerKey, 0o600); err != nil {
		return nil, err
	}
	return p.CA, nil
}
