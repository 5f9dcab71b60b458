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
	"math"
	"strings"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
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
	flushTimeoutMultiplier = 2
)

// scope is what all clients of one key pair, region and endpoint share.
type scope struct {
	clock    func() time.Time
	limits   *limiters
	locks    *lbLocks
	tasks    *taskMemory
	m        *metrics
	maxTries int
}

// Client talks to CLB in one region with one key pair. It is safe for
// concurrent use; get it from a Pool rather than building one per call.
type Client struct {
	sdk          *clbsdk.Client
	s            *scope
	flushTimeout time.Duration

	lbs        *coalescer[string, *clbsdk.LoadBalancer]
	listeners  *coalescer[string, *clbsdk.Listener]
	targets    *coalescer[string, *clbsdk.ListenerBackend]
	register   *coalescer[[]Target, string]
	deregister *coalescer[[]Target, string]
}

func newClient(cfg clients.Config, scheme string, s *scope, o Options) (*Client, error) {
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
	sdk, err := clbsdk.NewClient(cred, cfg.Region, cpf)
	if err != nil {
		return nil, err
	}
	sdk.WithHttpTransport(o.Transport)

	c := &Client{sdk: sdk, s: s, flushTimeout: flushTimeoutMultiplier * o.RequestTimeout}
	c.lbs = newCoalescer(o.BatchWindow, maxDescribeLBIDs, oneUnit, c.flushDescribeLBs)
	c.listeners = newCoalescer(o.BatchWindow, maxDescribeListenerIDs, oneUnit, c.flushDescribeListeners)
	c.targets = newCoalescer(o.BatchWindow, maxDescribeTargetsIDs, oneUnit, c.flushDescribeTargets)
	c.register = newCoalescer(o.TargetBatchWindow, maxBatchTargets, targetKeys, c.flushTargets(true))
	c.deregister = newCoalescer(o.TargetBatchWindow, maxBatchTargets, targetKeys, c.flushTargets(false))
	return c, nil
}

// CurrentRate returns the requests per second the client allows for action
// right now: the configured rate, or less while recovering from
// RequestLimitExceeded answers.
func (c *Client) CurrentRate(action string) float64 { return c.s.limits.current(action) }

// invoke sends one API call through the action's rate limiter, sends it
// again (after another token) while the API answers RequestLimitExceeded,
// and records metrics. A read (Describe*) that fails for a reason waiting
// can fix is sent again too, like a registration batch (see retryBatch):
// a controller's reconcile makes many reads, and one of them failing fails
// the reconcile, so with a tenth of calls failing most reconciles would,
// and managed resources back off exponentially (up to a minute) after
// consecutive failures. Reads change nothing, so retrying them is safe.
// Errors come back unwrapped; callers wrap them with the operation they
// were doing.
func invoke[Req, Resp any](ctx context.Context, c *Client, action string, req Req,
	send func(context.Context, Req) (Resp, error)) (Resp, error) {
	if strings.HasPrefix(action, "Describe") {
		var resp Resp
		err := retryBatch(ctx, func() error {
			var err error
			resp, err = invokeOnce(ctx, c, action, req, send)
			return err
		})
		return resp, err
	}
	return invokeOnce(ctx, c, action, req, send)
}

// invokeOnce is invoke without the retries of reads.
func invokeOnce[Req, Resp any](ctx context.Context, c *Client, action string, req Req,
	send func(context.Context, Req) (Resp, error)) (Resp, error) {
	var zero Resp
	for try := 1; ; try++ {
		if err := c.s.limits.wait(ctx, action); err != nil {
			return zero, err
		}
		start := time.Now()
		resp, err := send(ctx, req)
		code := Code(err)
		if err != nil && code == "" {
			code = "ClientError"
		}
		c.s.m.observeCall(action, code, time.Since(start))
		if err == nil {
			return resp, nil
		}
		if code == codeNetworkError && ctx.Err() != nil {
			return zero, ctx.Err() // the SDK flattens a cancelled request into text
		}
		switch classifyCode(code) {
		case Throttled:
			c.s.m.throttled.WithLabelValues(action).Inc()
			c.s.limits.throttled(action)
			if try < c.s.maxTries {
				continue
			}
		case Busy:
			c.s.m.busy.WithLabelValues(action).Inc()
		}
		return zero, err
	}
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
