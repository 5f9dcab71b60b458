package endpoints

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// serve runs a webhook server with options o and a handler on /ping, and
// returns its address.
func serve(t *testing.T, o func(host string, port int) (webhook.Options, error)) string {
	t.Helper()
	addr, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	host, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	opts, err := o(host, port)
	if err != nil {
		t.Fatal(err)
	}
	srv := webhook.NewServer(opts)
	srv.Register("/ping", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "pong") }))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	if err := testenv.Eventually(ctx, 10*time.Second, func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return addr
}

// get calls /ping over TLS trusting ca, offering HTTP/2 and HTTP/1.1, with
// cert as the client certificate when not nil, and returns the protocol
// the server chose; an error unless it answered 200 over HTTP/1.1.
func get(addr string, ca []byte, cert *tls.Certificate) (string, error) {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	cfg := &tls.Config{RootCAs: roots, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	proto := conn.ConnectionState().NegotiatedProtocol
	if proto != "http/1.1" {
		return proto, fmt.Errorf("negotiated %q", proto)
	}
	if _, err := io.WriteString(conn, "GET /ping HTTP/1.1\r\nHost: webhook\r\nConnection: close\r\n\r\n"); err != nil {
		return proto, err
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return proto, err
	}
	if len(b) < 12 || string(b[9:12]) != "200" {
		return proto, fmt.Errorf("answered %q", b)
	}
	return proto, nil
}

// TestServerSpeaksHTTP1Only: a client offering HTTP/2 first gets
// HTTP/1.1, with or without a client CA.
func TestServerSpeaksHTTP1Only(t *testing.T) {
	dir := t.TempDir()
	ca, err := testenv.ServingCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, func(host string, port int) (webhook.Options, error) { return Webhook(host, port, dir, "") })
	proto, err := get(addr, ca, nil)
	if err != nil || proto != "http/1.1" {
		t.Errorf("negotiated %q, %v; want http/1.1 and an answer", proto, err)
	}
}

// TestServerWantsClientCertificate: with a client CA, a caller without a
// certificate, or with one another CA signed, is refused in the TLS
// handshake; the API server's certificate is served.
func TestServerWantsClientCertificate(t *testing.T) {
	p, err := testenv.NewPKI(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := testenv.NewPKI(filepath.Join(t.TempDir(), "other"))
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, func(host string, port int) (webhook.Options, error) {
		return Webhook(host, port, p.ServerDir, filepath.Join(p.ClientDir, "ca.crt"))
	})
	apiServer, err := tls.X509KeyPair(p.ClientCert, p.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := tls.X509KeyPair(other.ClientCert, other.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	// TLS 1.3 clients learn of the refusal on their first read: an alert.
	if _, err := get(addr, p.CA, nil); err == nil || !strings.Contains(err.Error(), "tls: certificate required") {
		t.Errorf("a caller without a client certificate: %v, want refused in the handshake", err)
	}
	if _, err := get(addr, p.CA, &stranger); err == nil || !strings.Contains(err.Error(), "tls: unknown certificate authority") {
		t.Errorf("a caller with another CA's client certificate: %v, want refused in the handshake", err)
	}
	if proto, err := get(addr, p.CA, &apiServer); err != nil || proto != "http/1.1" {
		t.Errorf("the API server's certificate: %q, %v; want served over http/1.1", proto, err)
	}
}

// TestWebhookRefusesABadClientCA: a missing file or one without a
// certificate stops the start with a message naming the flag's file.
func TestWebhookRefusesABadClientCA(t *testing.T) {
	dir := t.TempDir()
	if _, err := Webhook("", 9443, dir, filepath.Join(dir, "missing.crt")); err == nil {
		t.Error("a missing client CA file: want an error")
	}
	if _, err := testenv.ServingCert(dir); err != nil {
		t.Fatal(err)
	}
	// tls.key is PEM but no certificate.
	if _, err := Webhook("", 9443, dir, filepath.Join(dir, "tls.key")); err == nil {
		t.Error("a client CA file without a certificate: want an error")
	}
}
