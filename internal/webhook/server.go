package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// HTTP1Only turns HTTP/2 off on a TLS server: a server speaking HTTP/2 to
// any client that reaches it is open to stream floods (rapid reset,
// CVE-2023-44487), and the API server calls webhooks over HTTP/1.1 anyway.
func HTTP1Only(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }

// ServerOptions are the options of the webhook server on host:port with
// the tls.crt and tls.key of certDir, speaking HTTP/1.1 only. With
// clientCA (a PEM file of CA certificates) set, a caller must present a
// client certificate one of them signed, as the API server does when its
// admission configuration gives it one; without, any caller that reaches
// the port is served.
func ServerOptions(host string, port int, certDir, clientCA string) (webhook.Options, error) {
	o := webhook.Options{Host: host, Port: port, CertDir: certDir, TLSOpts: []func(*tls.Config){HTTP1Only}}
	if clientCA == "" {
		return o, nil
	}
	b, err := os.ReadFile(clientCA)
	if err != nil {
		return o, fmt.Errorf("cannot read the webhook's client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return o, fmt.Errorf("the webhook's client CA %s holds no PEM certificate", clientCA)
	}
	o.TLSOpts = append(o.TLSOpts, func(c *tls.Config) {
		c.ClientCAs = pool
		c.ClientAuth = tls.RequireAndVerifyClientCert
	})
	return o, nil
}
