// Package emulator is an in-process emulation of the Tencent Cloud CLB API
// (clb, version 2018-03-17). It speaks the wire protocol the official Go SDK
// uses, signature checks included, and keeps an honest, stateful model of
// load balancers, listeners, rules, targets and asynchronous tasks, so that
// clients can be tested against real error codes, busy load balancers,
// quotas and rate limits without a cloud account.
//
// Point the SDK at it with HttpProfile.Endpoint = "127.0.0.1:<port>" and
// HttpProfile.Scheme = "http"; see the emulatortest package for a helper.
//
// It lives beside the provider's packages, not under internal/tooling,
// because it ships: users run it as cmd/tencentcloud-emulator.
package emulator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	apiVersion    = "2018-03-17" // clb
	vpcAPIVersion = "2017-03-12"
	adminPrefix   = "/_emulator/"
)

// apiService is one cloud service the emulator answers on its single
// endpoint: clb, the EIP/ENI part of vpc, and the calls that tag load
// balancers (tag TagResources, cam GetUserAppId: tag.go).
type apiService struct {
	name    string
	version string
	lookup  func(action string) handler
}

// serviceOf picks the service a request is for. The Go and Python SDKs
// name it in the credential scope; SDKs that derive the scope from the host
// (here "127") leave the version as the only hint. clb is the fallback, so
// that requests without either keep the clb error messages.
func serviceOf(scopeService, version string) *apiService {
	for _, s := range []apiService{
		{name: vpcServiceName, version: vpcAPIVersion, lookup: lookupVPCHandler},
		{name: tagServiceName, version: tagAPIVersion, lookup: lookupTagHandler},
		{name: camServiceName, version: camAPIVersion, lookup: lookupCAMHandler},
	} {
		if scopeService == s.name || (scopeService != serviceName && version == s.version) {
			return &s
		}
	}
	return &apiService{name: serviceName, version: apiVersion, lookup: lookupHandler}
}

// Emulator is one emulated region set of the CLB service. It is an
// http.Handler; Start serves it on a loopback port.
type Emulator struct {
	cfg   Config
	creds map[string]Credential

	// mu guards st. Handlers hold it for the whole of their state work and
	// never across I/O.
	mu sync.RWMutex
	st *store

	// dpMu serialises route computation and DataPlane.Apply so that an
	// older route set can never overwrite a newer one.
	dpMu       sync.Mutex
	lastRoutes []Route

	signing  signingKeys
	limiter  rateLimiter
	faults   atomic.Pointer[faultSet]
	latency  atomic.Pointer[latencySettings]
	policies atomic.Pointer[map[string]*CAMPolicy]
	counters callCounters
	injected callCounters // faults injected, by kind
	panics   atomic.Int64
	bufs     sync.Pool

	dirty  chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup
	closed atomic.Bool

	server   *http.Server
	listener net.Listener
	// fresh holds the connections accepted that have not sent a request
	// yet, which Close ends itself (see closeFresh).
	freshMu sync.Mutex
	fresh   map[net.Conn]struct{}
}

// call is one API request on its way through the pipeline.
type call struct {
	service   *apiService
	action    string
	region    string
	secretID  string
	requestID string
	language  string
	body      []byte
	now       time.Time

	// task is the asynchronous task the handler started, if any.
	task *task
	// changed marks a synchronous mutation that the data plane must see
	// before the response is written.
	changed bool
}

type handler func(e *Emulator, c *call) (any, *apiError)

// New builds an emulator from cfg, loading cfg.StateFile when it exists.
func New(cfg Config) (*Emulator, error) {
	cfg = cfg.withDefaults()
	e := &Emulator{
		cfg:   cfg,
		creds: make(map[string]Credential, len(cfg.Credentials)),
		st:    newStore(),
		dirty: make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	for _, c := range cfg.Credentials {
		if c.SecretID == "" || c.SecretKey == "" {
			return nil, errors.New("emulator: every credential needs a SecretID and a SecretKey")
		}
		e.creds[c.SecretID] = c
	}
	if _, err := parseIPv4(cfg.VIPBase); err != nil {
		return nil, fmt.Errorf("emulator: VIPBase: %w", err)
	}
	if _, err := parseULA(cfg.VIP6Base); err != nil {
		return nil, fmt.Errorf("emulator: VIP6Base: %w", err)
	}
	if err := checkVPCLoopbackCIDR(cfg.VPCLoopbackCIDR); err != nil {
		return nil, fmt.Errorf("emulator: VPCLoopbackCIDR: %w", err)
	}
	e.signing.keys = make(map[signingKeyID][]byte)
	e.bufs.New = func() any { return new(bytes.Buffer) }
	e.limiter.init(cfg.RateLimit, cfg.ActionRateLimit)
	e.latency.Store(&latencySettings{fixed: cfg.Latency, perAction: cloneDurations(cfg.ActionLatency)})
	e.counters.init()
	for id, p := range cfg.Policies {
		e.SetCAMPolicy(id, p)
	}
	e.injected.init()
	if cfg.StateFile != "" {
		if err := e.load(); err != nil {
			return nil, err
		}
		e.wg.Add(1)
		go e.persistLoop()
	}
	if cfg.DataPlane != nil && len(e.st.lbs) > 0 {
		e.pushDataPlane() // a restarted emulator serves its restored cloud at once
	}
	return e, nil
}

// Start builds an emulator and serves it on cfg-independent loopback
// address 127.0.0.1:0. It returns the endpoint ("127.0.0.1:port") to put in
// HttpProfile.Endpoint.
func Start(cfg Config) (*Emulator, string, error) {
	return StartOn(cfg, "127.0.0.1:0")
}

// StartOn is Start with an explicit listen address.
func StartOn(cfg Config, addr string) (*Emulator, string, error) {
	e, err := New(cfg)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = e.Close()
		return nil, "", err
	}
	e.listener = ln
	e.server = &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ConnState: e.trackConn}
	e.server.RegisterOnShutdown(e.closeFresh)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if err := e.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.cfg.Logf("emulator: serve: %v", err)
		}
	}()
	return e, ln.Addr().String(), nil
}

// Endpoint is the address Start listens on, or "" for an emulator that is
// only used as a handler.
func (e *Emulator) Endpoint() string {
	if e.listener == nil {
		return ""
	}
	return e.listener.Addr().String()
}

// Config returns the effective configuration (defaults filled in).
func (e *Emulator) Config() Config { return e.cfg }

// Close stops the server started by Start, stops pending task timers and
// writes the state file one last time. Tasks still running stay recorded as
// running in memory; a reload completes them.
func (e *Emulator) Close() error {
	if !e.closed.CompareAndSwap(false, true) {
		return nil
	}
	var errs []error
	if e.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := e.server.Shutdown(ctx); err != nil {
			errs = append(errs, err)
			_ = e.server.Close()
		}
		cancel()
	}
	e.mu.Lock()
	for _, t := range e.st.tasks {
		if t.timer != nil {
			t.timer.Stop()
		}
	}
	e.mu.Unlock()
	close(e.done)
	e.wg.Wait()
	if e.cfg.StateFile != "" {
		if err := e.save(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// trackConn keeps the set of connections that have sent no request yet.
func (e *Emulator) trackConn(c net.Conn, s http.ConnState) {
	e.freshMu.Lock()
	defer e.freshMu.Unlock()
	if s == http.StateNew {
		if e.fresh == nil {
			e.fresh = map[net.Conn]struct{}{}
		}
		e.fresh[c] = struct{}{}
		return
	}
	delete(e.fresh, c)
}

// closeFresh runs when Shutdown has closed the listener. Shutdown closes
// idle connections at once but counts one that never sent a request as
// idle only after 5 s (an SDK transport may open one and not use it), so
// Close would wait on it; no request will come on it now.
func (e *Emulator) closeFresh() {
	e.freshMu.Lock()
	defer e.freshMu.Unlock()
	for c := range e.fresh {
		_ = c.Close()
		delete(e.fresh, c)
	}
}

// ServeHTTP answers API calls on any path, and the admin API under
// /_emulator/.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, adminPrefix) {
		e.serveAdmin(w, r)
		return
	}
	c := &call{
		requestID: newRequestID(),
		action:    r.Header.Get("X-TC-Action"),
		region:    r.Header.Get("X-TC-Region"),
		language:  r.Header.Get("X-TC-Language"),
	}
	resp, apiErr, drop := e.process(r, c)
	switch {
	case drop:
		e.counters.add(c.secretID, c.action, "ConnectionDropped")
		dropConnection(w)
	case apiErr != nil:
		e.counters.add(c.secretID, c.action, apiErr.Code)
		e.writeError(w, c.requestID, apiErr)
	default:
		e.counters.add(c.secretID, c.action, codeOK)
		e.writeJSON(w, resp)
	}
}

// process runs the request pipeline. A panic anywhere below is turned into
// InternalError so that a client always gets an envelope.
func (e *Emulator) process(r *http.Request, c *call) (resp any, apiErr *apiError, drop bool) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler { //nolint:errorlint // sentinel compared as net/http does
				panic(p)
			}
			e.panics.Add(1)
			e.cfg.Logf("emulator: panic in %s: %v\n%s", c.action, p, debug.Stack())
			resp, apiErr, drop = nil, errorf(codeInternalError, "An internal error occurred; please try again later."), false
		}
	}()
	if r.Method != http.MethodPost {
		return nil, errorf(codeUnsupportedProtocol, "The emulator accepts POST requests with a JSON body only, got %s.", r.Method), false
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxRequestBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, errorf(codeRequestSizeLimit, "The request body exceeds %d bytes.", tooBig.Limit), false
		}
		return nil, errorf(codeInvalidParameter, "The request body could not be read: %v.", err), false
	}
	c.body = body
	if !e.sleep(r.Context(), c.action) {
		return nil, errorf(codeInternalError, "The request was cancelled."), false
	}
	c.now = e.cfg.Clock()

	scope, _ := parseAuthorization(r.Header.Get("Authorization"))
	svc := serviceOf(scope.service, r.Header.Get("X-TC-Version"))
	c.service = svc
	switch v := r.Header.Get("X-TC-Version"); {
	case v == "":
		return nil, missing("Version"), false
	case v != svc.version:
		return nil, errorf(codeNoSuchVersion, "The API version `%s` does not exist for %s (use %s).", v, svc.name, svc.version), false
	}
	if c.action == "" {
		return nil, missing("Action"), false
	}
	h := svc.lookup(c.action)
	if h == nil {
		return nil, errorf(codeInvalidAction, "The action `%s` is not found in %s %s.", c.action, svc.name, svc.version), false
	}
	secretID, authErr := e.authenticate(r, body, c.now, svc.name)
	if authErr != nil {
		return nil, authErr, false
	}
	c.secretID = secretID
	if c.region == "" && !regionless(svc) {
		return nil, missing("Region"), false
	}
	if c.region != "" && !e.regionExists(c.region) {
		return nil, errorf(codeRegionNotFound, "The region `%s` does not exist.", c.region), false
	}
	if res := e.authorize(secretID, c.region, svc.name, c.action, body); res != "" {
		return nil, errorf(codeUnauthorized,
			"You are not authorized to perform operation (%s:%s) on resource (%s); check the CAM policy of SecretId %s.",
			svc.name, c.action, res, secretID), false
	}
	if !e.limiter.allow(secretID, c.action, c.now) {
		return nil, errorf(codeRequestLimit, "Your current request times equals to `%s` in a second, which exceeds the frequency limit for %s:%s; please reduce the frequency of calls.",
			e.limiter.limitText(c.action), svc.name, c.action), false
	}
	if f := e.faults.Load(); f != nil {
		if d := f.delay(c.action); d > 0 {
			e.countInjected("Delay")
			if !sleepCtx(r.Context(), d) {
				return nil, errorf(codeInternalError, "The request was cancelled."), false
			}
		}
		switch act, ferr := f.match(c.action); act {
		case faultDrop:
			e.countInjected("ConnectionDropped")
			return nil, nil, true
		case faultPanic:
			e.countInjected("Panic")
			panic("injected fault: panic in " + c.action)
		case faultError:
			e.countInjected(ferr.Code)
			return nil, ferr, false
		}
	}

	resp, apiErr = h(e, c)
	if apiErr != nil {
		return nil, apiErr, false
	}
	switch {
	case c.task != nil && c.task.deadline.IsZero():
		e.finishTask(c.task) // zero task duration: done before the response
	case c.changed:
		e.pushDataPlane()
	}
	if c.task != nil || c.changed {
		e.markDirty()
	}
	return resp, nil, false
}

// dropConnection closes the client connection without an answer, the way a
// broken network path looks to the SDK.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func (e *Emulator) regionExists(region string) bool {
	for _, r := range e.cfg.Regions {
		if r == region {
			return true
		}
	}
	return false
}

// lookupHandler maps an action name to its handler.
func lookupHandler(action string) handler {
	switch action {
	case "CreateLoadBalancer":
		return (*Emulator).createLoadBalancer
	case "DescribeLoadBalancers":
		return (*Emulator).describeLoadBalancers
	case "DeleteLoadBalancer":
		return (*Emulator).deleteLoadBalancer
	case "ModifyLoadBalancerAttributes":
		return (*Emulator).modifyLoadBalancerAttributes
	case "CreateListener":
		return (*Emulator).createListener
	case "DescribeListeners":
		return (*Emulator).describeListeners
	case "ModifyListener":
		return (*Emulator).modifyListener
	case "DeleteListener":
		return (*Emulator).deleteListener
	case "DeleteLoadBalancerListeners":
		return (*Emulator).deleteLoadBalancerListeners
	case "CreateRule":
		return (*Emulator).createRule
	case "ModifyRule":
		return (*Emulator).modifyRule
	case "DeleteRule":
		return (*Emulator).deleteRule
	case "RegisterTargets":
		return (*Emulator).registerTargets
	case "DeregisterTargets":
		return (*Emulator).deregisterTargets
	case "DescribeTargets":
		return (*Emulator).describeTargets
	case "BatchRegisterTargets":
		return (*Emulator).batchRegisterTargets
	case "BatchDeregisterTargets":
		return (*Emulator).batchDeregisterTargets
	case "ModifyTargetWeight":
		return (*Emulator).modifyTargetWeight
	case "BatchModifyTargetWeight":
		return (*Emulator).batchModifyTargetWeight
	case "DescribeTargetHealth":
		return (*Emulator).describeTargetHealth
	case "DescribeTaskStatus":
		return (*Emulator).describeTaskStatus
	case "DescribeQuota":
		return (*Emulator).describeQuota
	}
	return nil
}

// Actions lists every action the emulator implements.
func Actions() []string {
	return []string{
		"CreateLoadBalancer", "DescribeLoadBalancers", "DeleteLoadBalancer", "ModifyLoadBalancerAttributes",
		"CreateListener", "DescribeListeners", "ModifyListener", "DeleteListener", "DeleteLoadBalancerListeners",
		"CreateRule", "ModifyRule", "DeleteRule",
		"RegisterTargets", "DeregisterTargets", "DescribeTargets", "BatchRegisterTargets", "BatchDeregisterTargets",
		"ModifyTargetWeight", "BatchModifyTargetWeight", "DescribeTargetHealth",
		"DescribeTaskStatus", "DescribeQuota",
	}
}

// PanicCount reports how many handler panics were turned into
// InternalError (injected ones included); tests use it to prove none
// happened.
func (e *Emulator) PanicCount() int64 { return e.panics.Load() }

// Reset forgets the whole cloud (load balancers, tasks, tokens), the call
// counters and the faults. Policies, latency and rate limits are kept.
func (e *Emulator) Reset() {
	e.mu.Lock()
	for _, t := range e.st.tasks {
		if t.timer != nil {
			t.timer.Stop()
		}
	}
	e.st = newStore()
	e.mu.Unlock()
	e.counters.reset()
	e.injected.reset()
	e.faults.Store(nil)
	e.limiter.reset()
	e.pushDataPlane()
	e.markDirty()
}
