// Package clb is the one way the provider talks to Tencent Cloud CLB. A
// Pool hands out one Client per account, region and endpoint; the Client
// rate-limits every action, lets only one writer at a time touch a load
// balancer, refuses writes while its own last task on that load balancer
// still runs (instead of waiting for it), coalesces concurrent describes
// and target changes into batch calls, and classifies every error once.
//
// No method waits for an asynchronous task: writes return the task id and
// callers check TaskStatus on their next reconcile.
package clb

import (
	"context"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
)

// API batch limits (reference §5).
const (
	maxDescribeLBIDs       = 20
	maxDescribeListenerIDs = 100
	maxDescribeTargetsIDs  = 20
	maxBatchTargets        = 500
	maxCreateListenerPorts = 49 // "Length of .Ports should be less than 50"
	maxDeleteListenerIDs   = 20
	maxDescribeLBPage      = 100
	maxWeightRules         = 100
	maxWeightRuleTargets   = 50
	maxWeightTargetsTotal  = 500
)

// scope is what all clients of one key pair, region and endpoint share.
type scope struct {
	clock func() time.Time
	api   *tcapi.Caller
	locks *lbLocks
	tasks *taskMemory
}

// Client talks to CLB in one region with one key pair. It is safe for
// concurrent use; get it from a Pool rather than building one per call.
type Client struct {
	sdk          *clbsdk.Client
	s            *scope
	flushTimeout time.Duration

	lbs        *tcapi.Coalescer[string, *clbsdk.LoadBalancer]
	listeners  *tcapi.Coalescer[string, *clbsdk.Listener]
	targets    *tcapi.Coalescer[string, *clbsdk.ListenerBackend]
	register   *tcapi.Coalescer[[]Target, string]
	deregister *tcapi.Coalescer[[]Target, string]
}

func newClient(ss tcapi.Session, s *scope, o Options) (*Client, error) {
	sdk, err := clbsdk.NewClient(ss.Credential, ss.Region, ss.Profile)
	if err != nil {
		return nil, err
	}
	sdk.WithHttpTransport(o.Transport)

	c := &Client{sdk: sdk, s: s, flushTimeout: o.FlushTimeout()}
	c.lbs = tcapi.NewCoalescer(o.BatchWindow, maxDescribeLBIDs, tcapi.OneUnit, c.flushDescribeLBs)
	c.listeners = tcapi.NewCoalescer(o.BatchWindow, maxDescribeListenerIDs, tcapi.OneUnit, c.flushDescribeListeners)
	c.targets = tcapi.NewCoalescer(o.BatchWindow, maxDescribeTargetsIDs, tcapi.OneUnit, c.flushDescribeTargets)
	c.register = tcapi.NewCoalescer(o.TargetBatchWindow, maxBatchTargets, targetKeys, c.flushTargets(true))
	c.deregister = tcapi.NewCoalescer(o.TargetBatchWindow, maxBatchTargets, targetKeys, c.flushTargets(false))
	return c, nil
}

// CurrentRate returns the requests per second the client allows for action
// right now: the configured rate, or less while recovering from
// RequestLimitExceeded answers.
func (c *Client) CurrentRate(action string) float64 { return c.s.api.Limits.Current(action) }

// invoke is tcapi.Invoke with this client's limits, metrics and codes.
func invoke[Req, Resp any](ctx context.Context, c *Client, action string, req Req,
	send func(context.Context, Req) (Resp, error)) (Resp, error) {
	return tcapi.Invoke(ctx, c.s.api, action, req, send)
}

// retryBatch is tcapi.RetryBatch with CLB's error codes.
func retryBatch(ctx context.Context, send func() error) error {
	return tcapi.RetryBatch(ctx, classifyCode, send)
}

// write runs an asynchronous write under the write lock of lbID, after
// making sure the last task this process started there has ended, and
// remembers the task id send returns.
func (c *Client) write(ctx context.Context, op, action, lbID string,
	send func(context.Context) (string, error)) (string, error) {
	if lbID == "" {
		return "", localErr(op, Invalid, "no load balancer id given")
	}
	unlock, err := c.s.locks.lock(ctx, lbID)
	if err != nil {
		return "", wrapErr(op, err)
	}
	defer unlock()
	if err := c.ensureIdle(ctx, op, action, lbID); err != nil {
		return "", err
	}
	task, err := send(ctx)
	if err != nil {
		return "", wrapErr(op, err)
	}
	c.s.tasks.remember(task, c.s.clock(), lbID)
	return task, nil
}

// flushContext bounds a coalesced call, which serves several callers and
// so cannot use any one caller's context.
func (c *Client) flushContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.flushTimeout)
}

// errEmptyAnswer reports an answer without the Response envelope, which
// the SDK turns into a nil Response rather than an error.
func errEmptyAnswer(op string) error {
	return localErr(op, Transient, "the API answered without a Response")
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func strs(ps []*string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if p != nil {
			out = append(out, *p)
		}
	}
	return out
}

func ptrs(ss []string) []*string {
	out := make([]*string, len(ss))
	for i := range ss {
		out[i] = &ss[i]
	}
	return out
}

func ptr[T any](v T) *T { return &v }
