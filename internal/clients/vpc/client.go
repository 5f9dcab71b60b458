// Package vpc is the one way the provider talks to the Tencent Cloud VPC
// API about elastic public IPs (EIPs). It shares its plumbing with the CLB
// client through tcapi: a Pool hands out one Client per account, region
// and endpoint; every action is rate-limited, throttled calls and failed
// reads are sent again, errors are classified once, concurrent Describe
// and Release calls are coalesced into batch calls.
//
// No method waits for an asynchronous task: writes return the task id and
// callers check TaskDone on their next reconcile.
package vpc

import (
	"context"

	vpcsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc/v20170312"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
)

// API limits of the EIP actions.
const (
	maxAddressIDs   = 100 // DescribeAddresses and ReleaseAddresses
	maxDescribePage = 100
)

// Options configure a Pool; the zero value is usable. TargetBatchWindow is
// not used by this package.
type Options = tcapi.Options

// Pool hands out one shared Client per credentials, region and endpoint,
// so that every controller of a process respects the same rate limits.
// Create one per process, beside the CLB pool.
type Pool struct {
	opts    Options
	m       *tcapi.Metrics
	clients *tcapi.Clients[*tcapi.Caller, *Client]
}

// NewPool returns an empty Pool.
func NewPool(o Options) *Pool {
	o = o.WithDefaults()
	return &Pool{opts: o, m: tcapi.NewMetrics(o.Registerer), clients: tcapi.NewClients[*tcapi.Caller, *Client]()}
}

// Client returns the Client of cfg, building it on first use. A rotated
// secret keeps the rate limits of the key pair.
func (p *Pool) Client(cfg clients.Config) (*Client, error) {
	return p.clients.Get("build VPC client", cfg, p.opts, func() *tcapi.Caller {
		return &tcapi.Caller{
			Limits:   tcapi.NewLimiters(p.opts.Clock, p.opts.Rate, p.opts.ActionRates),
			Metrics:  p.m,
			MaxTries: p.opts.MaxTries,
			Classify: classifyCode,
		}
	}, func(ss tcapi.Session, api *tcapi.Caller) (*Client, error) {
		sdk, err := vpcsdk.NewClient(ss.Credential, ss.Region, ss.Profile)
		if err != nil {
			return nil, err
		}
		sdk.WithHttpTransport(p.opts.Transport)
		c := &Client{sdk: sdk, api: api}
		b := tcapi.Batching{Window: p.opts.BatchWindow, Full: maxAddressIDs, Timeout: p.opts.FlushTimeout()}
		c.describes = tcapi.NewCoalescer(b, idUnits, c.flushDescribe)
		c.releases = tcapi.NewCoalescer(b, idUnits, c.flushRelease)
		return c, nil
	})
}

// Client talks to the VPC API in one region with one key pair. It is safe
// for concurrent use; get it from a Pool rather than building one per call.
type Client struct {
	sdk *vpcsdk.Client
	api *tcapi.Caller

	describes *tcapi.Coalescer[[]string, map[string]Address]
	releases  *tcapi.Coalescer[[]string, string]
}

// CurrentRate returns the requests per second the client allows for action
// right now.
func (c *Client) CurrentRate(action string) float64 { return c.api.Limits.Current(action) }

// invoke is tcapi.Invoke with this client's limits, metrics and codes.
func invoke[Req, Resp any](ctx context.Context, c *Client, action string, req Req,
	send func(context.Context, Req) (Resp, error)) (Resp, error) {
	return tcapi.Invoke(ctx, c.api, action, req, send)
}

func idUnits(ids []string) []string { return ids }

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func ptr[T any](v T) *T { return &v }
