package clb

import (
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
)

// Defaults of Options.
const (
	// DefaultRate is the documented limit of every CLB action: 20 requests
	// per second.
	DefaultRate = tcapi.DefaultRate
	// DefaultBatchWindow: see tcapi.DefaultBatchWindow.
	DefaultBatchWindow = tcapi.DefaultBatchWindow
	// DefaultTargetBatchWindow: see tcapi.DefaultTargetBatchWindow.
	DefaultTargetBatchWindow = tcapi.DefaultTargetBatchWindow
	// DefaultTargetBatchMaxWait: see tcapi.DefaultTargetBatchMaxWait.
	DefaultTargetBatchMaxWait = tcapi.DefaultTargetBatchMaxWait
	// DefaultRequestTimeout: see tcapi.DefaultRequestTimeout.
	DefaultRequestTimeout = tcapi.DefaultRequestTimeout
	// DefaultMaxTries: see tcapi.DefaultMaxTries.
	DefaultMaxTries = tcapi.DefaultMaxTries
)

// Call modes of Options.CallMode: see tcapi.CallsBatched, tcapi.CallsNaive.
const (
	CallsBatched = tcapi.CallsBatched
	CallsNaive   = tcapi.CallsNaive
)

// Options configure a Pool. The zero value is usable.
type Options = tcapi.Options

// Pool hands out one shared Client per credentials, region and endpoint,
// so that every controller of a process respects the same rate limits and
// the same one-writer-per-load-balancer rule. Create one per process.
type Pool struct {
	opts    Options
	m       *tcapi.Metrics
	clients *tcapi.Clients[*scope, *Client]
}

// NewPool returns an empty Pool.
func NewPool(o Options) *Pool {
	o = o.WithDefaults()
	return &Pool{opts: o, m: tcapi.NewMetrics(o.Registerer), clients: tcapi.NewClients[*scope, *Client]()}
}

// Client returns the Client of cfg, building it on first use. A changed
// secret key or token yields a new Client; the one it replaces is dropped
// from the pool but stays usable by whoever still holds it. A rotated
// secret keeps its scope, so old and new clients never write one load
// balancer at once.
func (p *Pool) Client(cfg clients.Config) (*Client, error) {
	return p.clients.Get("build CLB client", cfg, p.opts, func() *scope {
		return &scope{
			clock: p.opts.Clock,
			api: &tcapi.Caller{
				Limits:   tcapi.NewLimiters(p.opts.Clock, p.opts.Rate, p.opts.ActionRates),
				Metrics:  p.m,
				MaxTries: p.opts.MaxTries,
				Classify: classifyCode,
			},
			locks: newLBLocks(),
			tasks: newTaskMemory(),
		}
	}, func(ss tcapi.Session, s *scope) (*Client, error) { return newClient(ss, s, p.opts) })
}
