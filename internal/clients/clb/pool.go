package clb

import (
	"crypto/sha256"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
)

// Defaults of Options.
const (
	// DefaultRate is the documented limit of every CLB action: 20 requests
	// per second.
	DefaultRate = 20.0
	// DefaultBatchWindow is how long concurrent requests are gathered
	// before one coalesced call is sent.
	DefaultBatchWindow = 20 * time.Millisecond
	// DefaultTargetBatchWindow is how long target registrations and
	// deregistrations are gathered. They run in the background of the
	// reconciles that ask for them, so a longer window than for describes
	// costs no reconcile time and buys larger BatchRegisterTargets calls.
	DefaultTargetBatchWindow = 200 * time.Millisecond
	// DefaultRequestTimeout bounds one HTTP exchange with the API.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultMaxTries bounds how often one call is sent when the API
	// answers RequestLimitExceeded.
	DefaultMaxTries = 8
)

// Options configure a Pool. The zero value is usable.
type Options struct {
	// Rate is the requests per second allowed per action; 0 means
	// DefaultRate.
	Rate float64
	// ActionRates overrides Rate for some actions (by API action name,
	// e.g. "DescribeTaskStatus"); entries that are not positive are ignored.
	ActionRates map[string]float64
	// BatchWindow is how long concurrent describes and target changes are
	// gathered into one call; 0 means DefaultBatchWindow.
	BatchWindow time.Duration
	// TargetBatchWindow is the window of target registrations and
	// deregistrations; 0 means DefaultTargetBatchWindow.
	TargetBatchWindow time.Duration
	// RequestTimeout bounds one HTTP exchange; 0 means
	// DefaultRequestTimeout. The SDK counts it in whole seconds.
	RequestTimeout time.Duration
	// MaxTries bounds the sends of one call throttled by the API; 0 means
	// DefaultMaxTries.
	MaxTries int
	// Registerer receives the metrics; nil exports none. Collectors that
	// are already registered (by another Pool) are shared.
	Registerer prometheus.Registerer
	// Transport replaces the HTTP transport, e.g. in tests.
	Transport http.RoundTripper
	// Clock replaces time.Now for the rate limiter and the task memory. It
	// must advance: waiting callers get tokens as its time passes.
	Clock func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Rate <= 0 {
		o.Rate = DefaultRate
	}
	if o.BatchWindow <= 0 {
		o.BatchWindow = DefaultBatchWindow
	}
	if o.TargetBatchWindow <= 0 {
		o.TargetBatchWindow = DefaultTargetBatchWindow
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.MaxTries <= 0 {
		o.MaxTries = DefaultMaxTries
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Transport == nil {
		o.Transport = newTransport()
	}
	return o
}

// newTransport keeps enough idle connections for many concurrent
// controllers; the SDK's default keeps two per host.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// Pool hands out one shared Client per credentials, region and endpoint,
// so that every controller of a process respects the same rate limits and
// the same one-writer-per-load-balancer rule. Create one per process.
type Pool struct {
	opts Options
	m    *metrics

	mu      sync.Mutex
	clients map[clientKey]*Client
	scopes  map[scopeKey]*scope
}

// scopeKey identifies what rate limits, write locks and task memory are
// shared by: one key pair's view of one region. A rotated secret keeps its
// scope, so old and new clients never write one load balancer at once.
type scopeKey struct {
	secretID, region, endpoint, scheme string
}

// clientKey adds the secrets, hashed so the map holds no plain secret.
type clientKey struct {
	scopeKey
	secret [sha256.Size]byte
}

// NewPool returns an empty Pool.
func NewPool(o Options) *Pool {
	o = o.withDefaults()
	return &Pool{
		opts:    o,
		m:       newMetrics(o.Registerer),
		clients: map[clientKey]*Client{},
		scopes:  map[scopeKey]*scope{},
	}
}

// Client returns the Client of cfg, building it on first use. A changed
// secret key or token yields a new Client; the one it replaces is dropped
// from the pool but stays usable by whoever still holds it.
func (p *Pool) Client(cfg clients.Config) (*Client, error) {
	const op = "build CLB client"
	if cfg.SecretID == "" || cfg.SecretKey == "" {
		return nil, localErr(op, Auth, "credentials need a SecretId and a SecretKey")
	}
	if cfg.Region == "" {
		return nil, localErr(op, Invalid, "no region given")
	}
	scheme := strings.ToLower(cfg.Scheme)
	switch scheme {
	case "":
		scheme = "https"
	case "http", "https":
	default:
		return nil, localErr(op, Invalid, "scheme "+cfg.Scheme+" is neither http nor https")
	}
	sk := scopeKey{secretID: cfg.SecretID, region: cfg.Region, endpoint: cfg.Endpoint, scheme: scheme}
	key := clientKey{scopeKey: sk, secret: sha256.Sum256([]byte(cfg.SecretKey + "\x00" + cfg.Token))}

	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[key]; ok {
		return c, nil
	}
	s := p.scopes[sk]
	if s == nil {
		s = &scope{
			clock:    p.opts.Clock,
			limits:   newLimiters(p.opts.Clock, p.opts.Rate, p.opts.ActionRates),
			locks:    newLBLocks(),
			tasks:    newTaskMemory(),
			m:        p.m,
			maxTries: p.opts.MaxTries,
		}
		p.scopes[sk] = s
	}
	c, err := newClient(cfg, scheme, s, p.opts)
	if err != nil {
		return nil, wrapErr(op, err)
	}
	for k := range p.clients {
		if k.scopeKey == sk {
			delete(p.clients, k) // rotated away
		}
	}
	p.clients[key] = c
	return c, nil
}
