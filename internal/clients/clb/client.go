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
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
)

// scope is what all clients of one key pair, region and endpoint share.
type scope struct {
	clock func() time.Time
	api   *tcapi.Caller
	locks *lbLocks
	tasks *taskMemory
	uin   uinCache
}

// Client talks to CLB in one region with one key pair. It is safe for
// concurrent use; get it from a Pool rather than building one per call.
type Client struct {
	sdk *clbsdk.Client
	// common sends the calls of other services (tag.go).
	common *common.Client
	s      *scope
	naive  bool

	lbs        *tcapi.Coalescer[string, *clbsdk.LoadBalancer]
	listeners  *tcapi.Coalescer[string, *clbsdk.Listener]
	targets    *tcapi.Coalescer[string, *clbsdk.ListenerBackend]
	health     *tcapi.Coalescer[string, *clbsdk.ListenerHealth]
	register   *tcapi.Coalescer[[]Target, string]
	deregister *tcapi.Coalescer[[]Target, string]
}

func newClient(ss tcapi.Session, s *scope, o Options) (*Client, error) {
	sdk, err := clbsdk.NewClient(ss.Credential, ss.Region, ss.Profile)
	if err != nil {
		return nil, err
	}
	sdk.WithHttpTransport(o.Transport)
	cc := common.NewCommonClient(ss.Credential, ss.Region, ss.Profile)
	cc.WithHttpTransport(o.Transport)

	c := &Client{sdk: sdk, common: cc, s: s, naive: o.CallMode == CallsNaive}
	// Describes answer reconciles, so they gather for a short fixed
	// window. Target changes run in the background: their window stays
	// open while a burst lasts (up to TargetBatchMaxWait) and while the
	// action's rate limit makes the call wait, so that each call carries
	// more targets when calls are scarce.
	describe := func(full int, action string) tcapi.Batching {
		return tcapi.Batching{Window: o.BatchWindow, Full: full, Timeout: o.FlushTimeout(), Limits: s.api.Limits, Action: action}
	}
	change := func(action string) tcapi.Batching {
		return tcapi.Batching{Window: o.TargetBatchWindow, MaxWait: o.TargetBatchMaxWait, Full: MaxBatchTargets,
			Timeout: o.FlushTimeout(), Limits: s.api.Limits, Action: action}
	}
	c.lbs = tcapi.NewCoalescer(describe(MaxDescribeLBIDs, actionDescribeLBs), tcapi.OneUnit, describeFlush(c,
		describer[clbsdk.LoadBalancer]{opDescribeLB, actionDescribeLBs, MaxDescribeLBIDs, c.describeLBIDs, lbIDOf, missingLB}))
	c.listeners = tcapi.NewCoalescer(describe(MaxDescribeListenerIDs, actionDescribeListeners), tcapi.OneUnit, describeFlush(c,
		describer[clbsdk.Listener]{opDescribeListener, actionDescribeListeners, MaxDescribeListenerIDs, c.describeListenerIDs, listenerIDOf, missingListener}))
	c.targets = tcapi.NewCoalescer(describe(MaxDescribeTargetsListeners, actionDescribeTargets), tcapi.OneUnit, describeFlush(c,
		describer[clbsdk.ListenerBackend]{opDescribeTargets, actionDescribeTargets, MaxDescribeTargetsListeners, c.describeTargetIDs, backendIDOf, missingListener}))
	c.health = tcapi.NewCoalescer(describe(MaxTargetHealthListeners, actionTargetHealth), tcapi.OneUnit, describeFlush(c,
		describer[clbsdk.ListenerHealth]{opTargetHealth, actionTargetHealth, MaxTargetHealthListeners, c.describeHealthIDs, healthIDOf, missingListener}))
	c.register = tcapi.NewCoalescer(change(actionRegister), targetKeys, c.flushTargets(true))
	c.deregister = tcapi.NewCoalescer(change(actionDeregister), targetKeys, c.flushTargets(false))
	return c, nil
}

// CurrentRate returns the requests per second the client allows for action
// right now: the configured rate, or less while recovering from
// RequestLimitExceeded answers.
func (c *Client) CurrentRate(action string) float64 { return c.s.api.Limits.Current(action) }

// Naive reports whether the client sends one call per caller (see
// CallsNaive).
func (c *Client) Naive() bool { return c.naive }

// invoke is tcapi.Invoke with this client's limits, metrics and codes.
func invoke[Req, Resp any](ctx context.Context, c *Client, action string, req Req,
	send func(context.Context, Req) (Resp, error)) (Resp, error) {
	return tcapi.Invoke(ctx, c.s.api, action, req, send)
}

// call invokes action and makes sure the answer has its Response envelope
// (the SDK answers a missing one with a nil Response rather than an
// error), so that callers may read resp.Response. It returns the answer's
// RequestId, which is the task id of asynchronous writes.
func call[Req, Resp any](ctx context.Context, c *Client, op, action string, req Req,
	send func(context.Context, Req) (Resp, error)) (Resp, string, error) {
	resp, err := invoke(ctx, c, action, req, send)
	if err != nil {
		return resp, "", wrapErr(op, err)
	}
	id, ok := tcapi.Envelope(resp)
	if !ok {
		return resp, "", errEmptyAnswer(op)
	}
	return resp, id, nil
}

// writeCall is call of an asynchronous write of lbID, under its write
// lock (see write); it returns the answer and the task id.
func writeCall[Req, Resp any](ctx context.Context, c *Client, op, action, lbID string, req Req,
	send func(context.Context, Req) (Resp, error)) (Resp, string, error) {
	var resp Resp
	task, err := c.write(ctx, op, action, lbID, func(ctx context.Context) (string, error) {
		var id string
		var err error
		resp, id, err = call(ctx, c, op, action, req, send)
		return id, err
	})
	return resp, task, err
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

// A describer is what one kind of coalesced describe of objects O needs:
// how to ask for some ids under one key, and how to read an object's id.
type describer[O any] struct {
	op, action string
	size       int
	describe   func(ctx context.Context, key string, ids []string) ([]*O, error)
	id         func(*O) *string
	// missing names an id the answer lacks, for the NotFound error.
	missing func(key, id string) string
}

// missingListener is the missing function of describes by listener id.
func missingListener(lbID, id string) string {
	return "listener " + id + " of load balancer " + lbID + " does not exist"
}

// describeFlush answers coalesced describes: each id once, d.size per
// call; a caller whose id the answer lacks gets a NotFound error, and an
// id the API refuses as malformed fails only its callers.
func describeFlush[O any](c *Client, d describer[O]) func(context.Context, string, []*tcapi.Pending[string, *O]) {
	return func(ctx context.Context, key string, reqs []*tcapi.Pending[string, *O]) {
		keys, byID := tcapi.GroupByInput(tcapi.Live(reqs))
		tcapi.CallIsolating(keys, d.size, classifyCode, func(ids []string) error {
			c.s.api.Metrics.BatchSize.WithLabelValues(d.action).Observe(float64(len(ids)))
			objs, err := d.describe(ctx, key, ids)
			if err != nil {
				return err
			}
			found := map[string]*O{}
			for _, o := range objs {
				if o == nil {
					continue
				}
				if id := d.id(o); id != nil {
					found[*id] = o
				}
			}
			for _, id := range ids {
				o, ok := found[id]
				for _, p := range byID[id] {
					if ok {
						p.Reply(o, nil)
					} else {
						p.Reply(nil, localErr(d.op, NotFound, d.missing(key, id)))
					}
				}
			}
			return nil
		}, func(ids []string, err error) { tcapi.ReplyAll(byID, ids, err) })
	}
}

// errEmptyAnswer reports an answer without the Response envelope, which
// the SDK turns into a nil Response rather than an error.
func errEmptyAnswer(op string) error {
	return localErr(op, Transient, "the API answered without a Response")
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
