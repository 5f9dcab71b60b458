package clb

import (
	"context"
	"strconv"
	"strings"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
)

// Target is one backend bound to a listener (L4) or to a rule of it (L7).
type Target struct {
	// ListenerID is the listener the backend serves.
	ListenerID string
	// LocationID is the L7 rule; empty for TCP and UDP listeners.
	LocationID string
	// EniIP is the backend's private IP (a Pod's ENI IP or a node's IP).
	// Exactly one of EniIP and InstanceID is set.
	EniIP string
	// InstanceID is a CVM instance, bound by its primary IP.
	InstanceID string
	// Port is the backend port.
	Port int64
	// Weight is 0 to 100; nil means the API default (10).
	Weight *int64
}

const maxTargetWeight = 100

// problem describes what makes t unusable, or returns "".
func (t Target) problem() string {
	switch {
	case t.ListenerID == "":
		return "a target needs a listener id"
	case (t.EniIP == "") == (t.InstanceID == ""):
		return "a target needs exactly one of an ENI IP and an instance id"
	case t.Port < 1 || t.Port > 65535:
		return "target port " + strconv.FormatInt(t.Port, 10) + " is not within 1-65535"
	case t.Weight != nil && (*t.Weight < 0 || *t.Weight > maxTargetWeight):
		return "target weight " + strconv.FormatInt(*t.Weight, 10) + " is not within 0-100"
	}
	return ""
}

// key identifies the binding, whatever its weight.
func (t Target) key() string {
	return strings.Join([]string{t.ListenerID, t.LocationID, t.EniIP, t.InstanceID, strconv.FormatInt(t.Port, 10)}, "|")
}

// targetKeys is the units function of target batches.
func targetKeys(ts []Target) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.key()
	}
	return out
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (t Target) batch() *clbsdk.BatchTarget {
	return &clbsdk.BatchTarget{
		ListenerId: Ptr(t.ListenerID), LocationId: optional(t.LocationID),
		EniIp: optional(t.EniIP), InstanceId: optional(t.InstanceID),
		Port: Ptr(t.Port), Weight: t.Weight,
	}
}

func validTargets(op, lbID string, targets []Target) error {
	if lbID == "" {
		return localErr(op, Invalid, "no load balancer id given")
	}
	for _, t := range targets {
		if p := t.problem(); p != "" {
			return localErr(op, Invalid, p)
		}
	}
	return nil
}

// RegisterTargets binds targets to listeners of one load balancer and
// returns the task id (BatchRegisterTargets is synchronous: the targets are
// bound when it returns). Concurrent calls for one load balancer are sent
// together, up to 500 targets per call. When the API refuses the targets of
// a listener, only the callers with targets on that listener fail (with an
// Invalid error carrying the API's message); describe the targets to learn
// which are bound.
func (c *Client) RegisterTargets(ctx context.Context, lbID string, targets []Target) (string, error) {
	const op = "register targets"
	if err := validTargets(op, lbID, targets); err != nil || len(targets) == 0 {
		return "", err
	}
	if c.naive {
		task, err := tcapi.Direct(ctx, lbID, targets, c.flushTargets(true))
		return task, wrapErr(op, err)
	}
	task, err := c.register.Do(ctx, lbID, targets)
	return task, wrapErr(op, err)
}

// DeregisterTargets unbinds targets, batched as RegisterTargets is. The
// API refuses a listener's group when one of its targets is not bound, so
// a caller whose targets may already be gone should describe them first.
func (c *Client) DeregisterTargets(ctx context.Context, lbID string, targets []Target) (string, error) {
	const op = "deregister targets"
	if err := validTargets(op, lbID, targets); err != nil || len(targets) == 0 {
		return "", err
	}
	if c.naive {
		task, err := tcapi.Direct(ctx, lbID, targets, c.flushTargets(false))
		return task, wrapErr(op, err)
	}
	task, err := c.deregister.Do(ctx, lbID, targets)
	return task, wrapErr(op, err)
}

// flushTargets sends the target changes gathered for one load balancer.
func (c *Client) flushTargets(register bool) func(context.Context, string, []*tcapi.Pending[[]Target, string]) {
	op, action := "register targets", actionRegister
	if !register {
		op, action = "deregister targets", actionDeregister
	}
	return func(ctx context.Context, lbID string, reqs []*tcapi.Pending[[]Target, string]) {
		if len(tcapi.Live(reqs)) == 0 {
			return
		}
		failAll := func(err error) {
			for _, p := range reqs {
				p.Reply("", err)
			}
		}
		unlock, err := c.s.locks.lock(ctx, lbID)
		if err != nil {
			failAll(wrapErr(op, err))
			return
		}
		defer unlock()
		// Only callers still waiting once the lock is held are sent: a
		// caller that gave up before then may go on to undo its change (a
		// registration followed by a deregistration), and that undo takes
		// this lock too, so it can never overtake a change sent here.
		reqs = tcapi.Live(reqs)
		if len(reqs) == 0 {
			return
		}
		// Registrations are retried here (see retryBatch). Deregistrations
		// are not: one must never outlive the decision that sent it, and
		// while it waited to be sent again a Pod of the same name could
		// take its target over (same listener, same IP), which only the
		// caller knows. Their callers retry them, a batch's together.
		retry := retryBatch
		if !register {
			retry = func(_ context.Context, send func() error) error { return send() }
		}
		if err := retry(ctx, func() error { return c.ensureIdle(ctx, op, action, lbID) }); err != nil {
			failAll(err)
			return
		}
		b := &targetBatch{c: c, ctx: ctx, op: op, action: action, lbID: lbID, register: register,
			results: make([]targetResult, len(reqs))}
		b.call = func(entries []*targetEntry) (failed []string, msg, task string, err error) {
			err = retry(ctx, func() error {
				failed, msg, task, err = b.callAPI(entries)
				return err
			})
			return failed, msg, task, err
		}
		b.send(b.entries(reqs))
		for i, p := range reqs {
			p.Reply(b.results[i].task, b.results[i].err)
		}
	}
}

// targetBatch is one flush of target changes for one load balancer.
type targetBatch struct {
	c                *Client
	ctx              context.Context
	op, action, lbID string
	register         bool
	results          []targetResult // per caller
	// call sends one batch call: callAPI, or a fake in unit tests.
	call func([]*targetEntry) (failed []string, msg, task string, err error)
	// retries counts the calls spent isolating refused targets.
	retries int
}

type targetResult struct {
	task string
	err  error
}

// targetEntry is one target to send and the callers who asked for it.
type targetEntry struct {
	t       Target
	callers []int
}

// entries flattens the callers' targets, sending a target asked for by
// several callers once.
func (b *targetBatch) entries(reqs []*tcapi.Pending[[]Target, string]) []*targetEntry {
	var out []*targetEntry
	seen := map[string]*targetEntry{}
	for ci, p := range reqs {
		for _, t := range p.In {
			if e := seen[t.key()]; e != nil {
				if e.callers[len(e.callers)-1] != ci {
					e.callers = append(e.callers, ci)
				}
				continue
			}
			e := &targetEntry{t: t, callers: []int{ci}}
			seen[t.key()] = e
			out = append(out, e)
		}
	}
	return out
}

func (b *targetBatch) fail(ci int, err error) {
	if b.results[ci].err == nil {
		b.results[ci].err = err
	}
}

// callersOf lists the distinct callers of entries in order.
func callersOf(entries []*targetEntry) []int {
	var out []int
	seen := map[int]bool{}
	for _, e := range entries {
		for _, ci := range e.callers {
			if !seen[ci] {
				seen[ci] = true
				out = append(out, ci)
			}
		}
	}
	return out
}

// onListener returns the entries on listener.
func onListener(entries []*targetEntry, listener string) []*targetEntry {
	var out []*targetEntry
	for _, e := range entries {
		if e.t.ListenerID == listener {
			out = append(out, e)
		}
	}
	return out
}

// send sends entries in calls of at most 500 targets. When the API refuses
// something that may come from one target (the whole call refused as
// Invalid, or the group of one listener refused), the refused targets are
// sent again in two halves, down to single targets; a refused single
// target fails exactly the callers that asked for it. The split is on
// targets, not callers, so every retry sends strictly fewer targets than
// the call it retries, whatever targets callers share: isolating b bad
// targets among n costs at most about 2·b·log2(n) more calls, and never
// more than maxIsolationCalls.
func (b *targetBatch) send(entries []*targetEntry) {
	for _, chunk := range tcapi.Chunks(entries, MaxBatchTargets) {
		failed, msg, task, err := b.call(chunk)
		if err != nil {
			if len(chunk) > 1 && Classify(err) == Invalid && b.retry() {
				half := len(chunk) / 2
				b.send(chunk[:half])
				b.send(chunk[half:])
				continue
			}
			b.failEntries(chunk, err)
			continue
		}
		for _, ci := range callersOf(chunk) {
			b.results[ci].task = task
		}
		// The API applies or refuses the group of one listener as a whole:
		// the targets of a refused listener are sent again in halves, the
		// first halves of all refused listeners in one call and the second
		// halves in another.
		var split [][]*targetEntry
		seen := map[string]bool{}
		for _, l := range failed {
			if seen[l] {
				continue
			}
			seen[l] = true
			switch group := onListener(chunk, l); len(group) {
			case 0: // a listener we did not send; nothing of ours failed there
			case 1:
				b.failEntries(group, b.refused(l, msg))
			default:
				split = append(split, group)
			}
		}
		if len(split) == 0 {
			continue
		}
		if !b.retry() {
			for _, group := range split {
				b.failEntries(group, b.refused(group[0].t.ListenerID, msg))
			}
			continue
		}
		var first, second []*targetEntry
		for _, group := range split {
			half := len(group) / 2
			first = append(first, group[:half]...)
			second = append(second, group[half:]...)
		}
		b.send(first)
		b.send(second)
	}
}

func (b *targetBatch) refused(listener, msg string) error {
	return localErr(b.op, Invalid, "the API refused the targets on listener "+listener+": "+msg)
}

// maxIsolationCalls bounds the calls one flush spends isolating refused
// targets, so that no input keeps the load balancer's lock (which every
// other write to it waits for) for long: one refused target among 500
// takes 18. Past it, a refused group fails all its callers; they try
// again on their own.
const maxIsolationCalls = 32

// retry reports whether the flush may spend two more calls on a split.
func (b *targetBatch) retry() bool {
	if b.retries+2 > maxIsolationCalls {
		return false
	}
	b.retries += 2
	return true
}

// failEntries fails every caller that asked for one of entries.
func (b *targetBatch) failEntries(entries []*targetEntry, err error) {
	for _, ci := range callersOf(entries) {
		b.fail(ci, err)
	}
}

// callAPI sends one Batch(De)RegisterTargets and returns the listeners the
// API refused, its message and the task id.
func (b *targetBatch) callAPI(entries []*targetEntry) (failed []string, msg, task string, err error) {
	ts := make([]*clbsdk.BatchTarget, len(entries))
	for i, e := range entries {
		ts[i] = e.t.batch()
	}
	b.c.s.api.Metrics.BatchSize.WithLabelValues(b.action).Observe(float64(len(ts)))
	if b.register {
		req := clbsdk.NewBatchRegisterTargetsRequest()
		req.LoadBalancerId, req.Targets = &b.lbID, ts
		resp, task, err := call(b.ctx, b.c, b.op, b.action, req, b.c.sdk.BatchRegisterTargetsWithContext)
		if err != nil {
			return nil, "", "", err
		}
		return strs(resp.Response.FailListenerIdSet), Deref(resp.Response.Message), task, nil
	}
	req := clbsdk.NewBatchDeregisterTargetsRequest()
	req.LoadBalancerId, req.Targets = &b.lbID, ts
	resp, task, err := call(b.ctx, b.c, b.op, b.action, req, b.c.sdk.BatchDeregisterTargetsWithContext)
	if err != nil {
		return nil, "", "", err
	}
	return strs(resp.Response.FailListenerIdSet), Deref(resp.Response.Message), task, nil
}

// DescribeTargets returns the backends of one listener (for L7 listeners,
// grouped by rule), or a NotFound error. Concurrent calls for one load
// balancer are answered by one DescribeTargets per 20 listeners.
func (c *Client) DescribeTargets(ctx context.Context, lbID, listenerID string) (*clbsdk.ListenerBackend, error) {
	if lbID == "" || listenerID == "" {
		return nil, localErr(opDescribeTargets, Invalid, "a load balancer id and a listener id are needed")
	}
	b, err := c.targets.Do(ctx, lbID, listenerID)
	return b, wrapErr(opDescribeTargets, err)
}

const opDescribeTargets = "describe targets"

func backendIDOf(l *clbsdk.ListenerBackend) *string { return l.ListenerId }

// describeTargetIDs sends one DescribeTargets for up to 20 listeners.
func (c *Client) describeTargetIDs(ctx context.Context, lbID string, ids []string) ([]*clbsdk.ListenerBackend, error) {
	req := clbsdk.NewDescribeTargetsRequest()
	req.LoadBalancerId = &lbID
	req.ListenerIds = ptrs(ids)
	resp, _, err := call(ctx, c, opDescribeTargets, actionDescribeTargets, req, c.sdk.DescribeTargetsWithContext)
	if err != nil {
		return nil, err
	}
	return resp.Response.Listeners, nil
}

// DescribeListenersTargets returns the backends of listeners of one load
// balancer by listener id, in one DescribeTargets call per 20 listeners
// (the API's limit), whatever else is being described: a periodic audit
// of many listeners costs a known number of calls. A listener that does
// not exist is absent from the answer.
func (c *Client) DescribeListenersTargets(ctx context.Context, lbID string, listenerIDs []string) (map[string]*clbsdk.ListenerBackend, error) {
	if lbID == "" {
		return nil, localErr(opDescribeTargets, Invalid, "no load balancer id given")
	}
	out := map[string]*clbsdk.ListenerBackend{}
	for _, ids := range tcapi.Chunks(listenerIDs, MaxDescribeTargetsListeners) {
		c.s.api.Metrics.BatchSize.WithLabelValues(actionDescribeTargets).Observe(float64(len(ids)))
		ls, err := c.describeTargetIDs(ctx, lbID, ids)
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			if l != nil && l.ListenerId != nil {
				out[*l.ListenerId] = l
			}
		}
	}
	return out, nil
}

// ModifyTargetWeight sets the weights of bound targets of one load
// balancer in one BatchModifyTargetWeight task and returns the task id.
// Every target needs a Weight. The API takes at most 100 listener or rule
// groups, 50 targets per group and 500 in all; larger changes are refused
// as Invalid for the caller to split across tasks.
func (c *Client) ModifyTargetWeight(ctx context.Context, lbID string, targets []Target) (string, error) {
	const op, action = "modify target weight", "BatchModifyTargetWeight"
	if err := validTargets(op, lbID, targets); err != nil {
		return "", err
	}
	if len(targets) == 0 {
		return "", localErr(op, Invalid, "no targets given")
	}
	if len(targets) > MaxWeightTargets {
		return "", localErr(op, Invalid, "at most "+strconv.Itoa(MaxWeightTargets)+" targets per call")
	}
	var rules []*clbsdk.RsWeightRule
	index := map[string]*clbsdk.RsWeightRule{}
	for _, t := range targets {
		if t.Weight == nil {
			return "", localErr(op, Invalid, "target "+t.key()+" has no weight")
		}
		k := t.ListenerID + "|" + t.LocationID
		r := index[k]
		if r == nil {
			r = &clbsdk.RsWeightRule{ListenerId: Ptr(t.ListenerID), LocationId: optional(t.LocationID)}
			index[k] = r
			rules = append(rules, r)
		}
		if len(r.Targets) == MaxWeightRuleTargets {
			return "", localErr(op, Invalid, "at most "+strconv.Itoa(MaxWeightRuleTargets)+" targets per listener or rule per call")
		}
		r.Targets = append(r.Targets, &clbsdk.Target{
			Port: Ptr(t.Port), EniIp: optional(t.EniIP), InstanceId: optional(t.InstanceID), Weight: t.Weight,
		})
	}
	if len(rules) > MaxWeightRules {
		return "", localErr(op, Invalid, "at most "+strconv.Itoa(MaxWeightRules)+" listeners or rules per call")
	}
	req := clbsdk.NewBatchModifyTargetWeightRequest()
	req.LoadBalancerId, req.ModifyList = &lbID, rules
	c.s.api.Metrics.BatchSize.WithLabelValues(action).Observe(float64(len(targets)))
	_, task, err := writeCall(ctx, c, op, action, lbID, req, c.sdk.BatchModifyTargetWeightWithContext)
	return task, err
}
