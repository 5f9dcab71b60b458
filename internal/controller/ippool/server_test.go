package ippool

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestServeBeforeAllocator: until the NetPool controller starts, calls get
// the envelope with "retry", never a 500; routing errors come first.
func TestServeBeforeAllocator(t *testing.T) {
	s, err := NewServer(ServerOptions{Address: "127.0.0.1:0", Insecure: true}, logging.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		method, path string
		status, code int
	}{
		"allocate":     {http.MethodPost, AllocatorPath, 503, CodeUnavailable},
		"release host": {http.MethodDelete, HostPath + "10.0.0.1", 503, CodeUnavailable},
		"wrong method": {http.MethodGet, AllocatorPath, 405, CodeMethodNotAllowed},
		"unknown path": {http.MethodPost, "/", 404, CodeNotFound},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			r := httptest.NewRequest(tc.method, tc.path, nil)
			r.Header.Set("X-Request-Id", "rid")
			s.ServeHTTP(w, r)
			e := Envelope{}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
				t.Fatal(err)
			}
			if w.Code != tc.status || e.Code != tc.code || e.Result || e.RequestID != "rid" || e.Message == "" {
				t.Errorf("got %d %+v, want %d code %d", w.Code, e, tc.status, tc.code)
			}
		})
	}
}

// TestUnauthenticated: over HTTPS, a call without credentials, or with
// a header that is not a bearer token, is 401 with the envelope and a
// WWW-Authenticate challenge, before its body is read.
func TestUnauthenticated(t *testing.T) {
	dir := t.TempDir()
	if _, err := testenv.ServingCert(dir); err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(ServerOptions{Address: ":0", CertDir: dir}, logging.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	// No API server: a call that got past authentication would panic
	// into a 503.
	s.use(&Allocator{}, nil, nil)
	for name, header := range map[string]string{"none": "", "basic": "Basic dXNlcjpwdw==", "empty bearer": "Bearer "} {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, AllocatorPath, strings.NewReader(`{"host":"10.0.0.1","containerID":"c"}`))
			if header != "" {
				r.Header.Set("Authorization", header)
			}
			s.ServeHTTP(w, r)
			e := Envelope{}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
				t.Fatal(err)
			}
			if w.Code != 401 || e.Code != CodeUnauthenticated || e.Result || !strings.Contains(e.Message, "no credentials") || w.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("got %d %+v %v", w.Code, e, w.Header())
			}
		})
	}
}

// TestInsecureSocket: with Insecure on a unix socket the API answers
// there, a socket left by a killed provider is replaced, and the socket
// is gone once the server stops.
func TestInsecureSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "netservice.sock")
	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = stale.Close()
	s, err := NewServer(ServerOptions{Address: UnixPrefix + path, Insecure: true}, logging.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
	var resp *http.Response
	for range 100 {
		if resp, err = hc.Post("http://netservice"+AllocatorPath, "application/json", strings.NewReader("{}")); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	e := Envelope{}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != 503 || e.Code != CodeUnavailable {
		t.Errorf("over the socket before the allocator: %d %+v %v", resp.StatusCode, e, err)
	}
	_ = resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the socket after stop: %v", err)
	}
}

// TestServerOptions: HTTPS needs a certificate that can be read; plain
// HTTP is for loopback and sockets only, and takes no certificates.
func TestServerOptions(t *testing.T) {
	dir := t.TempDir()
	if _, err := testenv.ServingCert(dir); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		o    ServerOptions
		want string // "" is valid
	}{
		"https":                 {ServerOptions{Address: ":8090", CertDir: dir}, ""},
		"no certificate":        {ServerOptions{Address: ":8090"}, "--netservice-cert-dir must hold"},
		"certificate not there": {ServerOptions{Address: ":8090", CertDir: t.TempDir()}, "--netservice-cert-dir: "},
		"client CA not there":   {ServerOptions{Address: ":8090", CertDir: dir, ClientCA: "/nonexistent.pem"}, "--netservice-client-ca: "},
		"client CA not PEM":     {ServerOptions{Address: ":8090", CertDir: dir, ClientCA: dir + "/tls.key"}, "holds no PEM certificate"},
		"insecure on loopback":  {ServerOptions{Address: "127.0.0.1:8090", Insecure: true}, ""},
		"insecure on a socket":  {ServerOptions{Address: "unix:/run/n.sock", Insecure: true}, ""},
		"insecure on all":       {ServerOptions{Address: ":8090", Insecure: true}, "only on a loopback address or a unix socket"},
		"insecure on a node IP": {ServerOptions{Address: "10.0.0.5:8090", Insecure: true}, "only on a loopback address or a unix socket"},
		"insecure with a cert":  {ServerOptions{Address: "127.0.0.1:8090", CertDir: dir, Insecure: true}, "takes no --netservice-cert-dir"},
		"not an address":        {ServerOptions{Address: "8090", CertDir: dir}, "neither host:port"},
		"socket without a path": {ServerOptions{Address: "unix:", Insecure: true}, "names no socket path"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewServer(tc.o, logging.NewNopLogger())
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("NewServer(%+v): %v, want %q", tc.o, err, tc.want)
			}
		})
	}
}

// TestFreed: a fixed IP is Reserved for its Pod or claim until keep has
// passed (forever without keep); any other IP is Available and forgets
// its container.
func TestFreed(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	held := v1alpha1.NetIPStatus{Status: v1alpha1.NetIPActive, Host: "h", ContainerID: "c", PodName: "p", PodNamespace: "n", PodPrimaryKey: "n/p"}
	if got := freed(held, now); got != (v1alpha1.NetIPStatus{Status: v1alpha1.NetIPAvailable, UpdateTime: stamp(now)}) {
		t.Errorf("dynamic: %+v", got)
	}
	fixed := held
	fixed.Fixed, fixed.KeepDuration = true, "3s"
	got := freed(fixed, now)
	if got.Status != v1alpha1.NetIPReserved || got.ContainerID != "" || got.Host != "" || got.PodPrimaryKey != "n/p" || got.FixedIPExpiredTime != stamp(now.Add(3*time.Second)) {
		t.Errorf("fixed for 3s: %+v", got)
	}
	fixed.KeepDuration, fixed.IPClaimKey = "", "n/claim"
	if got := freed(fixed, now); got.Status != v1alpha1.NetIPReserved || got.FixedIPExpiredTime != "" || got.IPClaimKey != "n/claim" {
		t.Errorf("fixed forever: %+v", got)
	}
}
