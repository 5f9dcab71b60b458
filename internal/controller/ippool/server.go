package ippool

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/endpoints"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/httpauth"
)

// Paths of the allocator API, as the bcs netservice CNI plugin calls them.
const (
	AllocatorPath = "/netservicecontroller/v1/allocator"
	HostPath      = AllocatorPath + "/host/"
)

// maxBody bounds a request body; the seed's are a few hundred bytes.
const maxBody = 64 << 10

// An Envelope is every answer of the API, success or not.
type Envelope struct {
	Code      int     `json:"code"`
	Message   string  `json:"message"`
	Result    bool    `json:"result"`
	Data      []Lease `json:"data"`
	RequestID string  `json:"request_id"`
}

// UnixPrefix marks a ServerOptions.Address that is a unix socket's path.
const UnixPrefix = "unix:"

// ServerOptions say where and how the allocator API is served. The
// default is HTTPS whose callers prove who they are; Insecure is plain
// HTTP that anyone who reaches the address may use, so it is only
// allowed where no one but the node itself can: loopback or a socket.
type ServerOptions struct {
	// Address is host:port, or UnixPrefix and a socket's path.
	Address string
	// CertDir holds tls.crt and tls.key, the serving certificate, read
	// again when they change.
	CertDir string
	// ClientCA is a PEM file of CAs; a client certificate one of them
	// signed identifies its caller (CN the user, O the groups). Empty:
	// bearer tokens only.
	ClientCA string
	// Insecure serves plain HTTP without authentication.
	Insecure bool
}

// Validate says what is wrong with o, in terms of the provider's flags.
func (o ServerOptions) Validate() error {
	if o.Address == "" {
		return errors.New("--netservice-bind-address is empty")
	}
	path, unix := strings.CutPrefix(o.Address, UnixPrefix)
	if unix && path == "" {
		return fmt.Errorf("--netservice-bind-address %q names no socket path", o.Address)
	}
	if !unix {
		if _, _, err := net.SplitHostPort(o.Address); err != nil {
			return fmt.Errorf("--netservice-bind-address %q is neither host:port nor %s<path>: %w", o.Address, UnixPrefix, err)
		}
	}
	if !o.Insecure {
		if o.CertDir == "" {
			return errors.New("the allocator API serves HTTPS: --netservice-cert-dir must hold its tls.crt and tls.key " +
				"(--netservice-insecure serves plain HTTP without authentication, on loopback or a unix socket only)")
		}
		return nil
	}
	if o.CertDir != "" || o.ClientCA != "" {
		return errors.New("--netservice-insecure serves plain HTTP: it takes no --netservice-cert-dir or --netservice-client-ca")
	}
	if !unix && !endpoints.Loopback(o.Address) {
		return fmt.Errorf("--netservice-insecure serves without authentication, so only on a loopback address or a unix socket (%s<path>), not on %q", UnixPrefix, o.Address)
	}
	return nil
}

// A Server serves the allocator API on its own listener. It is a manager
// Runnable that needs the leader: with one writer, a CNI call retried
// after a lost answer meets the cache that saw the first answer's write,
// so it finds the IP it was given. (Two replicas serving would still never
// give an IP twice, since every write carries the version it read, but a
// retry on the other replica could miss a write its cache has not seen
// and take a second IP.) A non-leader does not listen, so a Service in
// front sends calls to the leader only.
type Server struct {
	o        ServerOptions
	log      logging.Logger
	tls      *tls.Config // nil: Insecure
	certs    *certwatcher.CertWatcher
	backends atomic.Pointer[backends]
}

// What a Server answers with once the NetPool controller runs.
type backends struct {
	alloc *Allocator
	auth  *httpauth.Authenticator
}

// NewServer returns a server as o says, its certificates read now so
// that a bad one stops the provider at start, on every replica.
func NewServer(o ServerOptions, log logging.Logger) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := &Server{o: o, log: log}
	if o.Insecure {
		return s, nil
	}
	cw, err := certwatcher.New(filepath.Join(o.CertDir, "tls.crt"), filepath.Join(o.CertDir, "tls.key"))
	if err != nil {
		return nil, fmt.Errorf("--netservice-cert-dir: %w", err)
	}
	s.certs = cw
	s.tls = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cw.GetCertificate}
	endpoints.HTTP1Only(s.tls)
	if o.ClientCA != "" {
		pem, err := os.ReadFile(o.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("--netservice-client-ca: %w", err)
		}
		cas := x509.NewCertPool()
		if !cas.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--netservice-client-ca: %s holds no PEM certificate", o.ClientCA)
		}
		// A certificate is one way to prove who one is; a token another.
		s.tls.ClientCAs, s.tls.ClientAuth = cas, tls.VerifyClientCertIfGiven
	}
	return s, nil
}

// use starts answering with a, authenticating callers through kube (the
// manager's client: TokenReviews, SubjectAccessReviews) and api (Nodes,
// read uncached); until then (safe-start: the NetPool CRDs are not
// served yet) every call gets CodeUnavailable.
func (s *Server) use(a *Allocator, kube client.Client, api client.Reader) {
	s.backends.Store(&backends{alloc: a, auth: httpauth.New(kube, api)})
}

// NeedLeaderElection is true: see Server.
func (s *Server) NeedLeaderElection() bool { return true }

// Start listens until ctx is done.
func (s *Server) Start(ctx context.Context) error {
	network, addr := "tcp", s.o.Address
	if path, ok := strings.CutPrefix(addr, UnixPrefix); ok {
		network, addr = "unix", path
		// A socket left by a killed provider would refuse the listen.
		if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() == fs.ModeSocket {
			_ = os.Remove(path)
		}
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return fmt.Errorf("cannot listen for the netservice allocator API: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	if s.tls != nil {
		go func() {
			if err := s.certs.Start(ctx); err != nil {
				s.log.Info("Stopped watching the allocator API's certificate", "error", err)
			}
		}()
		ln = tls.NewListener(ln, s.tls)
		s.log.Info("Serving the netservice allocator API over HTTPS", "address", ln.Addr().String(), "clientCA", s.o.ClientCA)
	} else {
		s.log.Info("WARNING: serving the netservice allocator API WITHOUT TLS OR AUTHENTICATION (--netservice-insecure): "+
			"any process that reaches this address may allocate and release every IP of every NetPool", "address", ln.Addr().String())
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ServeHTTP answers one call. Every answer is an Envelope; a fault of ours
// is CodeUnavailable, never a bare 500.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Request-Id")
	if id == "" {
		id = utilrand.String(16)
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Info("Allocator call panicked", "request_id", id, "panic", fmt.Sprint(p))
			write(w, id, nil, errorf(CodeUnavailable, http.StatusServiceUnavailable, "internal fault; retry"))
		}
	}()
	data, err := s.serve(r)
	if err != nil {
		s.log.Debug("Allocator call refused", "request_id", id, "method", r.Method, "path", r.URL.Path, "error", err)
	}
	if isCode(err, CodeUnauthenticated) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="netservice"`)
	}
	write(w, id, data, err)
}

func (s *Server) serve(r *http.Request) ([]Lease, error) {
	switch {
	case r.URL.Path == AllocatorPath:
		if r.Method != http.MethodPost && r.Method != http.MethodDelete {
			return nil, errorf(CodeMethodNotAllowed, http.StatusMethodNotAllowed, "%s %s: use POST to allocate or DELETE to release", r.Method, r.URL.Path)
		}
	case strings.HasPrefix(r.URL.Path, HostPath) && !strings.Contains(strings.TrimPrefix(r.URL.Path, HostPath), "/"):
		if r.Method != http.MethodDelete {
			return nil, errorf(CodeMethodNotAllowed, http.StatusMethodNotAllowed, "%s %s: use DELETE to release a host's IPs", r.Method, r.URL.Path)
		}
	default:
		return nil, errorf(CodeNotFound, http.StatusNotFound, "no such path %s; the API is under %s", r.URL.Path, AllocatorPath)
	}
	b := s.backends.Load()
	if b == nil {
		return nil, errorf(CodeUnavailable, http.StatusServiceUnavailable, "the NetPool kinds are not served yet; retry")
	}
	ctx := r.Context()
	acc, err := s.access(ctx, b.auth, r)
	if err != nil {
		return nil, err
	}
	a := b.alloc
	if host, ok := strings.CutPrefix(r.URL.Path, HostPath); ok {
		return a.ReleaseHost(ctx, acc, host)
	}
	req := Request{}
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	if err := dec.Decode(&req); err != nil {
		return nil, errorf(CodeMalformed, http.StatusBadRequest, "the body is not a JSON request: %v", err)
	}
	if r.Method == http.MethodDelete {
		return a.Release(ctx, acc, req)
	}
	l, err := a.Allocate(ctx, acc, req)
	if err != nil {
		return nil, err
	}
	return []Lease{*l}, nil
}

// access is what r's caller may do; with Insecure, everything.
func (s *Server) access(ctx context.Context, auth *httpauth.Authenticator, r *http.Request) (*access, error) {
	if s.o.Insecure {
		return &access{}, nil
	}
	c, err := auth.Authenticate(ctx, r)
	switch {
	case errors.Is(err, httpauth.ErrUnauthenticated):
		return nil, errorf(CodeUnauthenticated, http.StatusUnauthorized, "%v", err)
	case err != nil:
		return nil, unavailable(err)
	}
	return &access{caller: c, auth: auth}, nil
}

func write(w http.ResponseWriter, id string, data []Lease, err error) {
	env := Envelope{Result: true, Message: "success", Data: data, RequestID: id}
	if env.Data == nil {
		env.Data = []Lease{}
	}
	status := http.StatusOK
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = errorf(CodeUnavailable, http.StatusServiceUnavailable, "%v", err)
		}
		env.Code, env.Message, env.Result, status = e.Code, e.Message, false, e.Status
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(env)
}
