package ippool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
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

// A Server serves the allocator API on its own listener. It is a manager
// Runnable that needs the leader: with one writer, a CNI call retried
// after a lost answer meets the cache that saw the first answer's write,
// so it finds the IP it was given. (Two replicas serving would still never
// give an IP twice, since every write carries the version it read, but a
// retry on the other replica could miss a write its cache has not seen
// and take a second IP.) A non-leader does not listen, so a Service in
// front sends calls to the leader only.
type Server struct {
	addr  string
	log   logging.Logger
	alloc atomic.Pointer[Allocator]
}

// NewServer returns a server for addr ("host:port").
func NewServer(addr string, log logging.Logger) *Server {
	return &Server{addr: addr, log: log}
}

// use starts answering with a; until then (safe-start: the NetPool CRDs
// are not served yet) every call gets CodeUnavailable.
func (s *Server) use(a *Allocator) { s.alloc.Store(a) }

// NeedLeaderElection is true: see Server.
func (s *Server) NeedLeaderElection() bool { return true }

// Start listens until ctx is done.
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("cannot listen for the netservice allocator API: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	s.log.Info("Serving the netservice allocator API", "address", ln.Addr().String())
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
	a := s.alloc.Load()
	if a == nil {
		return nil, errorf(CodeUnavailable, http.StatusServiceUnavailable, "the NetPool kinds are not served yet; retry")
	}
	ctx := r.Context()
	if host, ok := strings.CutPrefix(r.URL.Path, HostPath); ok {
		return a.ReleaseHost(ctx, host)
	}
	req := Request{}
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	if err := dec.Decode(&req); err != nil {
		return nil, errorf(CodeMalformed, http.StatusBadRequest, "the body is not a JSON request: %v", err)
	}
	if r.Method == http.MethodDelete {
		return a.Release(ctx, req)
	}
	l, err := a.Allocate(ctx, req)
	if err != nil {
		return nil, err
	}
	return []Lease{*l}, nil
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
