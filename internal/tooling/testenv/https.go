package testenv

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"time"
)

// An HTTPSRequest is one request to one of the provider's TLS servers
// (metrics, webhooks): what the tests check is how the server treats the
// caller, so the server's certificate is not verified.
type HTTPSRequest struct {
	Method string // GET if empty
	URL    string
	// Bearer is sent as the Authorization token unless empty.
	Bearer string
	Body   []byte
	// Cert is the client certificate, if any.
	Cert *tls.Certificate
	// Protos is the ALPN offer; HTTP/1.1 only if empty.
	Protos []string
}

// An HTTPSAnswer is the server's status, body and protocol.
type HTTPSAnswer struct {
	Code  int
	Body  string
	Proto string
}

// HTTPS sends r on a connection of its own, bounded by 10 seconds.
func HTTPS(ctx context.Context, r HTTPSRequest) (HTTPSAnswer, error) {
	cfg := &tls.Config{InsecureSkipVerify: true, NextProtos: r.Protos} //nolint:gosec // the callers, not the server, are checked
	if len(cfg.NextProtos) == 0 {
		cfg.NextProtos = []string{"http/1.1"}
	}
	if r.Cert != nil {
		cfg.Certificates = []tls.Certificate{*r.Cert}
	}
	tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return HTTPSAnswer{}, err
	}
	if r.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.Bearer != "" {
		req.Header.Set("Authorization", "Bearer "+r.Bearer)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return HTTPSAnswer{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return HTTPSAnswer{Code: resp.StatusCode, Body: string(b), Proto: resp.Proto}, err
}
