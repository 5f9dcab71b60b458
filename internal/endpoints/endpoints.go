// Package endpoints sets up the provider's network endpoints other than
// the cloud's and the API server's: the webhook server's and the metrics
// server's TLS and who they let in, and which bind addresses are loopback.
package endpoints

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// HTTP1Only turns HTTP/2 off on a TLS server: a server speaking HTTP/2 to
// any client that reaches it is open to stream floods (rapid reset,
// CVE-2023-44487), and the API server calls webhooks over HTTP/1.1 anyway.
func HTTP1Only(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }

// Webhook are the options of the webhook server on host:port with
// the tls.crt and tls.key of certDir, speaking HTTP/1.1 only. With
// clientCA (a PEM file of CA certificates) set, a caller must present a
// client certificate one of them signed, as the API server does when its
// admission configuration gives it one; without, any caller that reaches
// the port is served.
func Webhook(host string, port int, certDir, clientCA string) (webhook.Options, error) {
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

// Metrics are the options of the metrics server on addr ("0" turns it
// off), HTTP/1.1 only. Secure serves HTTPS with a self-signed certificate
// (scrapers reach Pods by IP, which no certificate Crossplane makes names)
// to callers whose bearer token the API server authenticates and who may
// get the non-resource URL /metrics; otherwise plain HTTP to anyone, which
// Check refuses off loopback.
func Metrics(addr string, secure bool) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr, TLSOpts: []func(*tls.Config){HTTP1Only}}
	if secure {
		o.SecureServing = true
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}

// Loopback reports whether a bind address listens on loopback only; an
// empty host listens on every interface.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
