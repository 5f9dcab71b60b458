package benchpeer

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// CloudDomain is the root of the cloud API hosts the peer's SDK clients
// dial (clb.tencentcloudapi.com, cam.…, tag.…, vpc.…); its endpoint
// setting only adds a suffix under it, always over HTTPS.
const CloudDomain = "tencentcloudapi.com"

// Front puts the emulator where the peer looks for the cloud without a
// change to the peer: the Tencent Cloud SDK clones http.DefaultTransport,
// which honours HTTPS_PROXY, so the peer runs with HTTPS_PROXY pointing at
// the front and SSL_CERT_FILE at the front's CA. The front accepts the
// CONNECT to <service>.tencentcloudapi.com:443, ends TLS with a certificate
// for *.tencentcloudapi.com, and sends clb and vpc calls on to the
// emulator over plain HTTP with their Host kept (the TC3 signature covers
// it). The two other calls the peer makes, at start only, it answers
// itself: cam GetUserAppId (the account's OwnerUin) and tag TagResources
// (only made for load balancers it creates, which the benchmark's pools
// never do).
type Front struct {
	// ProxyURL is the value for the peer's HTTPS_PROXY.
	ProxyURL string
	// CAFile is the value for the peer's SSL_CERT_FILE.
	CAFile string

	outer *http.Server
	inner *http.Server
	conns *connListener

	mu    sync.Mutex
	local map[string]int // calls answered here, by service:action
}

// OwnerUin is the account the front's cam GetUserAppId reports.
const OwnerUin = "100000000001"

// StartFront starts a front for the emulator at endpoint (host:port),
// writing its CA under dir.
func StartFront(dir, endpoint string) (*Front, error) {
	caPEM, cert, err := frontCert()
	if err != nil {
		return nil, err
	}
	f := &Front{CAFile: filepath.Join(dir, "front-ca.crt"), local: map[string]int{}}
	if err := os.WriteFile(f.CAFile, caPEM, 0o600); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f.ProxyURL = "http://" + ln.Addr().String()
	target := &url.URL{Scheme: "http", Host: endpoint}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
	}}
	f.conns = &connListener{addr: ln.Addr(), ch: make(chan net.Conn), done: make(chan struct{})}
	f.inner = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch service, _, _ := strings.Cut(r.Host, "."); service {
		case "clb", "vpc":
			proxy.ServeHTTP(w, r)
		default:
			f.answer(w, service, r.Header.Get("X-TC-Action"))
		}
	})}
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12}
	f.outer = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.Host)
		if r.Method != http.MethodConnect || !strings.HasSuffix(host, "."+CloudDomain) {
			http.Error(w, "the benchmark front only tunnels to *."+CloudDomain, http.StatusForbidden)
			return
		}
		hj, ok := w.(http.Hijacker)
		if !ok {
			http.Error(w, "no hijack", http.StatusInternalServerError)
			return
		}
		conn, buf, err := hj.Hijack()
		if err != nil {
			return
		}
		if _, err := conn.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
			_ = conn.Close()
			return
		}
		f.conns.push(tls.Server(&bufferedConn{Conn: conn, r: buf.Reader}, tlsCfg))
	})}
	go func() { _ = f.inner.Serve(f.conns) }()
	go func() { _ = f.outer.Serve(ln) }()
	return f, nil
}

// answer replies to the cam and tag calls the peer makes, and rejects any
// other so that a new dependency of the peer shows as an error.
func (f *Front) answer(w http.ResponseWriter, service, action string) {
	f.mu.Lock()
	f.local[service+":"+action]++
	f.mu.Unlock()
	reqID := fmt.Sprintf("front-%d", time.Now().UnixNano())
	var resp map[string]any
	switch service + ":" + action {
	case "cam:GetUserAppId":
		resp = map[string]any{"AppId": 1250000000, "Uin": OwnerUin, "OwnerUin": OwnerUin, "RequestId": reqID}
	case "tag:TagResources":
		resp = map[string]any{"RequestId": reqID}
	default:
		resp = map[string]any{"Error": map[string]string{"Code": "InvalidAction",
			"Message": fmt.Sprintf("the benchmark front does not serve %s %s", service, action)}, "RequestId": reqID}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"Response": resp})
}

// LocalCalls returns the calls the front answered itself, by
// "service:action".
func (f *Front) LocalCalls() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.local))
	for k, v := range f.local {
		out[k] = v
	}
	return out
}

// Close stops the front and drops open tunnels.
func (f *Front) Close() error {
	err := f.outer.Close()
	f.conns.close()
	return errors.Join(err, f.inner.Close())
}

// frontCert makes a throwaway CA and a certificate for the cloud hosts.
func frontCert() ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "benchmark front CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "*." + CloudDomain},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"*." + CloudDomain, "*.test." + CloudDomain},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	caPEM := pemBlock("CERTIFICATE", caDER)
	return caPEM, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// connListener hands tunnelled connections to the inner HTTP server.
type connListener struct {
	addr net.Addr
	ch   chan net.Conn
	once sync.Once
	done chan struct{}
}

func (l *connListener) push(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		_ = c.Close()
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) close()         { l.once.Do(func() { close(l.done) }) }
func (l *connListener) Close() error   { l.close(); return nil }
func (l *connListener) Addr() net.Addr { return l.addr }

// bufferedConn keeps bytes the CONNECT parser already read.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
