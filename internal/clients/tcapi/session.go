// Package tcapi is the plumbing every Tencent Cloud service client of the
// provider shares (CLB and VPC today): per-action adaptive rate limits, the
// invoke wrapper that retries throttled calls and reads, error classes,
// metrics, the coalescing of concurrent requests into batch calls, and one
// client per key pair, region and endpoint. The service packages add only
// their API calls and their error codes.
package tcapi

import (
	"crypto/sha256"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
)

// Defaults of Options.
const (
	// DefaultRate is the documented limit of most actions: 20 requests per
	// second.
	DefaultRate = 20.0
	// DefaultBatchWindow is how long concurrent requests are gathered
	// before one coalesced call is sent.
	DefaultBatchWindow = 20 * time.Millisecond
	// DefaultTargetBatchWindow is how long CLB target registrations and
	// deregistrations are gathered. They run in the background of the
	// reconciles that ask for them, so a longer window than for describes
	// costs no reconcile time and buys larger BatchRegisterTargets calls.
	DefaultTargetBatchWindow = 200 * time.Millisecond
	// DefaultTargetBatchMaxWait is how long a burst of target changes may
	// keep one load balancer's window open: long enough that a burst of
	// Pods costs a call per load balancer about every second, short
	// enough that a Pod's address is published within the bind-latency
	// goal (2 s).
	DefaultTargetBatchMaxWait = time.Second
	// DefaultRequestTimeout bounds one HTTP exchange with the API.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultMaxTries bounds how often one call is sent when the API
	// answers RequestLimitExceeded.
	DefaultMaxTries = 8
)

// Call modes of Options.CallMode.
const (
	// CallsBatched coalesces concurrent requests into batch calls.
	CallsBatched = "batched"
	// CallsNaive sends one call per caller, as a straightforward per-Pod
	// controller does: a measuring aid, not for production.
	CallsNaive = "naive"
)

// Options configure a service client pool. The zero value is usable.
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
	// TargetBatchWindow is the window of CLB target registrations and
	// deregistrations; 0 means DefaultTargetBatchWindow. Other services
	// ignore it.
	TargetBatchWindow time.Duration
	// TargetBatchMaxWait bounds how long requests that keep arriving (each
	// within TargetBatchWindow of the last) keep a target window open; 0
	// means DefaultTargetBatchMaxWait, and less than TargetBatchWindow
	// means a fixed window.
	TargetBatchMaxWait time.Duration
	// CallMode is CallsBatched (""), or CallsNaive to send one call per
	// caller, for measuring what batching saves.
	CallMode string
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

// WithDefaults fills in the zero fields.
func (o Options) WithDefaults() Options {
	if o.Rate <= 0 {
		o.Rate = DefaultRate
	}
	if o.BatchWindow <= 0 {
		o.BatchWindow = DefaultBatchWindow
	}
	if o.TargetBatchWindow <= 0 {
		o.TargetBatchWindow = DefaultTargetBatchWindow
	}
	if o.TargetBatchMaxWait <= 0 {
		o.TargetBatchMaxWait = DefaultTargetBatchMaxWait
	}
	if o.CallMode == "" {
		o.CallMode = CallsBatched
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
		o.Transport = NewTransport()
	}
	return o
}

// FlushTimeout bounds a coalesced call, which serves several callers and so
// cannot use any one caller's context.
func (o Options) FlushTimeout() time.Duration { return 2 * o.RequestTimeout }

// NewTransport keeps enough idle connections for many concurrent
// controllers; the SDK's default keeps two per host.
func NewTransport() *http.Transport {
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

// Session is what an SDK client of any service is built from.
type Session struct {
	Credential common.CredentialIface
	Region     string
	Profile    *profile.ClientProfile
}

// Clients hands out one shared client C per credentials, region and
// endpoint, so that every controller of a process respects the same rate
// limits; S is what all clients of one key pair's view of one region share
// (limits, locks, task memory), kept when a secret is rotated.
type Clients[S, C any] struct {
	mu      sync.Mutex
	clients map[clientKey]C
	scopes  map[scopeKey]S
}

type scopeKey struct {
	secretID, region, endpoint, scheme string
}

// clientKey adds the secrets, hashed so the map holds no plain secret.
type clientKey struct {
	scopeKey
	secret [sha256.Size]byte
}

// NewClients returns an empty set of clients.
func NewClients[S, C any]() *Clients[S, C] {
	return &Clients[S, C]{clients: map[clientKey]C{}, scopes: map[scopeKey]S{}}
}

// Get returns the client of cfg, building it with build on first use
// (newScope is called for a scope seen the first time). A changed secret
// key or token yields a new client; the one it replaces is dropped but
// stays usable by whoever still holds it. op names the operation in errors.
func (p *Clients[S, C]) Get(op string, cfg clients.Config, o Options, newScope func() S,
	build func(Session, S) (C, error)) (C, error) {
	var zero C
	if cfg.SecretID == "" || cfg.SecretKey == "" {
		return zero, LocalErr(op, Auth, "credentials need a SecretId and a SecretKey")
	}
	if cfg.Region == "" {
		return zero, LocalErr(op, Invalid, "no region given")
	}
	scheme := strings.ToLower(cfg.Scheme)
	switch scheme {
	case "":
		scheme = "https"
	case "http", "https":
	default:
		return zero, LocalErr(op, Invalid, "scheme "+cfg.Scheme+" is neither http nor https")
	}
	sk := scopeKey{secretID: cfg.SecretID, region: cfg.Region, endpoint: cfg.Endpoint, scheme: scheme}
	key := clientKey{scopeKey: sk, secret: sha256.Sum256([]byte(cfg.SecretKey + "\x00" + cfg.Token))}

	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[key]; ok {
		return c, nil
	}
	s, ok := p.scopes[sk]
	if !ok {
		s = newScope()
		p.scopes[sk] = s
	}
	c, err := build(newSession(cfg, scheme, o), s)
	if err != nil {
		return zero, Wrap(op, err, CommonClass)
	}
	for k := range p.clients {
		if k.scopeKey == sk {
			delete(p.clients, k) // rotated away
		}
	}
	p.clients[key] = c
	return c, nil
}

// Len is the number of clients held.
func (p *Clients[S, C]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.clients)
}

func newSession(cfg clients.Config, scheme string, o Options) Session {
	cpf := profile.NewClientProfile()
	cpf.HttpProfile.Endpoint = cfg.Endpoint
	cpf.HttpProfile.Scheme = scheme
	cpf.HttpProfile.ReqTimeout = int(math.Ceil(o.RequestTimeout.Seconds()))
	cpf.Language = "en-US"
	// Retries are ours: the SDK would sleep without honouring ctx and
	// retry behind the rate limiter's back.
	cpf.RateLimitExceededMaxRetries = 0
	cpf.NetworkFailureMaxRetries = 0
	cpf.DisableRegionBreaker = true

	var cred common.CredentialIface = common.NewCredential(cfg.SecretID, cfg.SecretKey)
	if cfg.Token != "" {
		cred = common.NewTokenCredential(cfg.SecretID, cfg.SecretKey, cfg.Token)
	}
	return Session{Credential: cred, Region: cfg.Region, Profile: cpf}
}
