// Package fake is an in-memory CLB region for the controllers' unit tests:
// load balancers with their listeners, the writes made to them, and errors
// to inject. It answers as the client does, without its rate limits,
// batching or tasks.
package fake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	sdkerrors "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

// Cloud is a fake region: load balancers with listeners, and a log of
// writes. Tests set its fields between calls; its methods may run
// concurrently.
type Cloud struct {
	mu sync.Mutex
	// Quota is the listener quota DescribeQuota answers, unless QuotaErr.
	Quota    int64
	QuotaErr error
	// QuotaCalls counts DescribeQuota calls.
	QuotaCalls int
	LBs        map[string]*clbsdk.LoadBalancer
	Listeners  map[string][]*clbsdk.Listener
	// Errs makes writes to a load balancer fail.
	Errs map[string]error
	// Task is what TaskStatus answers for any task.
	Task clb.TaskState
	// TargetReads counts DescribeTargets calls.
	TargetReads int
	backends    map[string]*clbsdk.ListenerBackend // by listener id
	writes      []string
	seq         int
}

// New is a region holding running load balancers with ids.
func New(ids ...string) *Cloud {
	c := &Cloud{Task: clb.TaskSucceeded, Quota: 50, LBs: map[string]*clbsdk.LoadBalancer{}, Listeners: map[string][]*clbsdk.Listener{}, Errs: map[string]error{},
		backends: map[string]*clbsdk.ListenerBackend{}}
	for _, id := range ids {
		c.AddLB(id, nil)
	}
	return c
}

// AddLB adds a running load balancer with tags.
func (c *Cloud) AddLB(id string, tags map[string]string) {
	lb := &clbsdk.LoadBalancer{
		LoadBalancerId: clb.Ptr(id), Status: clb.Ptr(uint64(1)), VipIsp: clb.Ptr("BGP"),
		LoadBalancerVips: []*string{clb.Ptr("10.0.0." + fmt.Sprint(len(c.LBs)+1))}, CreateTime: clb.Ptr(fmt.Sprintf("2025-01-01 00:00:%02d", len(c.LBs))),
	}
	for k, v := range tags {
		lb.Tags = append(lb.Tags, &clbsdk.TagInfo{TagKey: clb.Ptr(k), TagValue: clb.Ptr(v)})
	}
	c.LBs[id] = lb
}

func (c *Cloud) write(format string, args ...any) {
	c.writes = append(c.writes, fmt.Sprintf(format, args...))
}

// errListenerNotFound is the cloud's answer for a listener it does not have.
var errListenerNotFound = sdkerrors.NewTencentCloudSDKError("InvalidParameter.ListenerIdNotFound", "listener not found", "req")

// errLBNotFound is the cloud's answer for a load balancer it does not have.
var errLBNotFound = sdkerrors.NewTencentCloudSDKError("InvalidParameter.LBIdNotFound", "LoadBalancer not exist", "req")

func (c *Cloud) DescribeQuota(context.Context) ([]*clbsdk.Quota, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.QuotaCalls++
	if c.QuotaErr != nil {
		return nil, c.QuotaErr
	}
	return []*clbsdk.Quota{
		{QuotaId: clb.Ptr("TOTAL_OPEN_CLB_QUOTA"), QuotaLimit: clb.Ptr(int64(100))},
		{QuotaId: clb.Ptr(clb.ListenerQuotaID), QuotaLimit: clb.Ptr(c.Quota)},
	}, nil
}

func (c *Cloud) DescribeLoadBalancer(_ context.Context, id string) (*clbsdk.LoadBalancer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if lb, ok := c.LBs[id]; ok {
		return lb, nil
	}
	return nil, errLBNotFound
}

func (c *Cloud) FindLoadBalancersByTag(_ context.Context, key, value string) ([]*clbsdk.LoadBalancer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*clbsdk.LoadBalancer
	for _, lb := range c.LBs {
		for _, t := range lb.Tags {
			if *t.TagKey == key && *t.TagValue == value {
				out = append(out, lb)
			}
		}
	}
	return out, nil
}

// FindLoadBalancersByName returns the load balancers named name.
func (c *Cloud) FindLoadBalancersByName(_ context.Context, name string) ([]*clbsdk.LoadBalancer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*clbsdk.LoadBalancer
	for _, lb := range c.LBs {
		if clb.Deref(lb.LoadBalancerName) == name {
			out = append(out, lb)
		}
	}
	return out, nil
}

// ModifyLoadBalancerAttributes records the modification.
func (c *Cloud) ModifyLoadBalancerAttributes(_ context.Context, req *clbsdk.ModifyLoadBalancerAttributesRequest) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := clb.Deref(req.LoadBalancerId)
	if err := c.Errs[id]; err != nil {
		return "", err
	}
	if _, ok := c.LBs[id]; !ok {
		return "", errLBNotFound
	}
	c.write("ModifyLoadBalancerAttributes %s", id)
	return "task", nil
}

func (c *Cloud) CreateLoadBalancer(_ context.Context, req *clbsdk.CreateLoadBalancerRequest) ([]string, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	id := fmt.Sprintf("lb-auto%d", c.seq)
	tags := map[string]string{}
	for _, t := range req.Tags {
		tags[*t.TagKey] = *t.TagValue
	}
	c.AddLB(id, tags)
	c.LBs[id].Status = clb.Ptr(uint64(0)) // being created
	c.write("CreateLoadBalancer %s token=%s", id, clb.Deref(req.ClientToken))
	return []string{id}, "task", nil
}

func (c *Cloud) DeleteLoadBalancer(_ context.Context, id string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.Errs[id]; err != nil {
		return "", err
	}
	delete(c.LBs, id)
	c.write("DeleteLoadBalancer %s", id)
	return "task", nil
}

// TagLoadBalancer binds tags to load balancer id, a key already there
// taking the new value.
func (c *Cloud) TagLoadBalancer(_ context.Context, id string, tags map[string]string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.Errs[id]; err != nil {
		return err
	}
	lb, ok := c.LBs[id]
	if !ok {
		return errLBNotFound
	}
	keys := slices.Sorted(maps.Keys(tags))
	for _, k := range keys {
		i := slices.IndexFunc(lb.Tags, func(t *clbsdk.TagInfo) bool { return clb.Deref(t.TagKey) == k })
		if i < 0 {
			lb.Tags = append(lb.Tags, &clbsdk.TagInfo{TagKey: clb.Ptr(k)})
			i = len(lb.Tags) - 1
		}
		lb.Tags[i].TagValue = clb.Ptr(tags[k])
	}
	c.write("TagLoadBalancer %s %v", id, keys)
	return nil
}

func (c *Cloud) DescribeListeners(_ context.Context, lbID, _ string, _ int64) ([]*clbsdk.Listener, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.LBs[lbID]; !ok {
		return nil, errLBNotFound
	}
	return slices.Clone(c.Listeners[lbID]), nil
}

func (c *Cloud) CreateListener(_ context.Context, req *clbsdk.CreateListenerRequest) ([]string, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := *req.LoadBalancerId
	if err := c.Errs[id]; err != nil {
		return nil, "", err
	}
	var ids []string
	for i, p := range req.Ports {
		c.seq++
		l := &clbsdk.Listener{
			ListenerId: clb.Ptr(fmt.Sprintf("lbl-%d", c.seq)), ListenerName: clb.Ptr(*req.ListenerNames[i]), Protocol: clb.Ptr(*req.Protocol), Port: clb.Ptr(*p),
			EndPort: clb.Ptr(int64(clb.Deref(req.EndPort))), Scheduler: req.Scheduler, //nolint:gosec // G115: test ports.
		}
		c.Listeners[id] = append(c.Listeners[id], l)
		ids = append(ids, *l.ListenerId)
	}
	c.write("CreateListener %s %s %d..%d end=%d", id, *req.Protocol, *req.Ports[0], *req.Ports[len(req.Ports)-1], clb.Deref(req.EndPort))
	return ids, "task", nil
}

func (c *Cloud) ModifyListener(_ context.Context, req *clbsdk.ModifyListenerRequest) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.Errs[*req.LoadBalancerId]; err != nil {
		return "", err
	}
	for _, l := range c.Listeners[*req.LoadBalancerId] {
		if *l.ListenerId == *req.ListenerId && req.Scheduler != nil {
			l.Scheduler = req.Scheduler
		}
	}
	c.write("ModifyListener %s %s", *req.LoadBalancerId, *req.ListenerId)
	return "task", nil
}

func (c *Cloud) DeleteListeners(_ context.Context, lbID string, ids []string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.Errs[lbID]; err != nil {
		return "", err
	}
	c.Listeners[lbID] = slices.DeleteFunc(c.Listeners[lbID], func(l *clbsdk.Listener) bool { return slices.Contains(ids, *l.ListenerId) })
	c.write("DeleteListeners %s %d", lbID, len(ids))
	return "task", nil
}

// DeleteListener deletes one listener.
func (c *Cloud) DeleteListener(ctx context.Context, lbID, id string) (string, error) {
	return c.DeleteListeners(ctx, lbID, []string{id})
}

// Log is the writes made, sorted: load balancers are written in parallel.
func (c *Cloud) Log() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.writes)
	slices.Sort(out)
	return out
}

// Writes is the writes made, in order: for a test writing one load
// balancer, where the order is the controller's.
func (c *Cloud) Writes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.writes)
}

// TaskStatus answers Task for every task.
func (c *Cloud) TaskStatus(context.Context, string) (clb.TaskState, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Task, "", nil
}

// DescribeListener returns listener id of load balancer lbID.
func (c *Cloud) DescribeListener(_ context.Context, lbID, id string) (*clbsdk.Listener, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, err := c.listener(lbID, id)
	return l, err
}

// listener finds a listener; c.mu is held.
func (c *Cloud) listener(lbID, id string) (*clbsdk.Listener, error) {
	if _, ok := c.LBs[lbID]; !ok {
		return nil, errLBNotFound
	}
	for _, l := range c.Listeners[lbID] {
		if clb.Deref(l.ListenerId) == id {
			return l, nil
		}
	}
	return nil, errListenerNotFound
}

// CreateRule adds the request's rules to its listener, as loc-<n>.
func (c *Cloud) CreateRule(_ context.Context, req *clbsdk.CreateRuleRequest) ([]string, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lbID, id := clb.Deref(req.LoadBalancerId), clb.Deref(req.ListenerId)
	if err := c.Errs[lbID]; err != nil {
		return nil, "", err
	}
	l, err := c.listener(lbID, id)
	if err != nil {
		return nil, "", err
	}
	var ids []string
	for _, in := range req.Rules {
		c.seq++
		r := &clbsdk.RuleOutput{
			LocationId: clb.Ptr(fmt.Sprintf("loc-%d", c.seq)), Domain: in.Domain, Url: in.Url,
			Scheduler: in.Scheduler, SessionExpireTime: in.SessionExpireTime, ForwardType: in.ForwardType,
		}
		l.Rules = append(l.Rules, r)
		ids = append(ids, *r.LocationId)
	}
	c.write("CreateRule %s %s %v", lbID, id, ids)
	return ids, "task", nil
}

// ModifyRule records the modification.
func (c *Cloud) ModifyRule(_ context.Context, req *clbsdk.ModifyRuleRequest) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lbID := clb.Deref(req.LoadBalancerId)
	if err := c.Errs[lbID]; err != nil {
		return "", err
	}
	c.write("ModifyRule %s %s %s", lbID, clb.Deref(req.ListenerId), clb.Deref(req.LocationId))
	return "task", nil
}

// DeleteRule removes rules from their listener.
func (c *Cloud) DeleteRule(_ context.Context, req *clbsdk.DeleteRuleRequest) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lbID, id := clb.Deref(req.LoadBalancerId), clb.Deref(req.ListenerId)
	if err := c.Errs[lbID]; err != nil {
		return "", err
	}
	if l, err := c.listener(lbID, id); err == nil {
		l.Rules = slices.DeleteFunc(l.Rules, func(r *clbsdk.RuleOutput) bool {
			return slices.ContainsFunc(req.LocationIds, func(loc *string) bool { return clb.Deref(loc) == clb.Deref(r.LocationId) })
		})
	}
	c.write("DeleteRule %s %s %d", lbID, id, len(req.LocationIds))
	return "task", nil
}

// SetTargets puts listener b.ListenerId, with its protocol, rules and
// targets, on load balancer lbID, which it adds if missing.
func (c *Cloud) SetTargets(lbID string, b *clbsdk.ListenerBackend) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.LBs[lbID]; !ok {
		c.AddLB(lbID, nil)
	}
	l := &clbsdk.Listener{ListenerId: b.ListenerId, Protocol: b.Protocol, Port: b.Port}
	for _, r := range b.Rules {
		l.Rules = append(l.Rules, &clbsdk.RuleOutput{LocationId: r.LocationId, Domain: r.Domain, Url: r.Url})
	}
	c.Listeners[lbID] = append(c.Listeners[lbID], l)
	c.backends[clb.Deref(b.ListenerId)] = b
}

// DescribeTargets returns the targets of a listener, on it or on its rules.
func (c *Cloud) DescribeTargets(_ context.Context, lbID, id string) (*clbsdk.ListenerBackend, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.TargetReads++
	l, err := c.listener(lbID, id)
	if err != nil {
		return nil, err
	}
	return c.backend(l), nil
}

// DescribeListenersTargets returns the targets of the listeners ids of
// load balancer lbID, by listener id; as from the client, a listener that
// does not exist is absent. It counts as one TargetReads.
func (c *Cloud) DescribeListenersTargets(_ context.Context, lbID string, ids []string) (map[string]*clbsdk.ListenerBackend, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.TargetReads++
	if _, ok := c.LBs[lbID]; !ok {
		return nil, errLBNotFound
	}
	out := map[string]*clbsdk.ListenerBackend{}
	for _, id := range ids {
		if l, err := c.listener(lbID, id); err == nil {
			out[id] = c.backend(l)
		}
	}
	return out, nil
}

// backend is the targets of l, created empty; c.mu is held.
func (c *Cloud) backend(l *clbsdk.Listener) *clbsdk.ListenerBackend {
	id := clb.Deref(l.ListenerId)
	if b, ok := c.backends[id]; ok {
		return b
	}
	b := &clbsdk.ListenerBackend{ListenerId: l.ListenerId, Protocol: l.Protocol, Port: l.Port}
	for _, r := range l.Rules {
		b.Rules = append(b.Rules, &clbsdk.RuleTargets{LocationId: r.LocationId, Domain: r.Domain, Url: r.Url})
	}
	c.backends[id] = b
	return b
}

// targets finds the list holding t's backends, on its listener or its
// rule; c.mu is held.
func (c *Cloud) targets(lbID string, t clb.Target) (*[]*clbsdk.Backend, error) {
	if err := c.Errs[lbID]; err != nil {
		return nil, err
	}
	l, err := c.listener(lbID, t.ListenerID)
	if err != nil {
		return nil, err
	}
	b := c.backend(l)
	if t.LocationID == "" {
		return &b.Targets, nil
	}
	for _, r := range b.Rules {
		if clb.Deref(r.LocationId) == t.LocationID {
			return &r.Targets, nil
		}
	}
	return nil, sdkerrors.NewTencentCloudSDKError("InvalidParameter.LocationNotFound", "rule not found", "req")
}

// is reports whether backend b is target t.
func is(b *clbsdk.Backend, t clb.Target) bool {
	if clb.Deref(b.Port) != t.Port {
		return false
	}
	if t.InstanceID != "" {
		return clb.Deref(b.InstanceId) == t.InstanceID
	}
	return slices.ContainsFunc(b.PrivateIpAddresses, func(ip *string) bool { return clb.Deref(ip) == t.EniIP })
}

// record logs a write of targets as "<listener>/<rule>/<ip or instance>:<port>[=weight]".
func (c *Cloud) record(action, lbID string, ts []clb.Target) {
	s := action + " " + lbID
	for _, t := range ts {
		s += fmt.Sprintf(" %s/%s/%s%s:%d", t.ListenerID, t.LocationID, t.EniIP, t.InstanceID, t.Port)
		if t.Weight != nil {
			s += fmt.Sprintf("=%d", *t.Weight)
		}
	}
	c.write("%s", s)
}

// writeTargets applies change to the list holding each target, then logs
// the write as action.
func (c *Cloud) writeTargets(action, lbID string, ts []clb.Target, change func(list *[]*clbsdk.Backend, t clb.Target)) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range ts {
		list, err := c.targets(lbID, t)
		if err != nil {
			return "", err
		}
		change(list, t)
	}
	c.record(action, lbID, ts)
	return "task", nil
}

// RegisterTargets binds targets not bound yet, with the API's default
// weight when none is given.
func (c *Cloud) RegisterTargets(_ context.Context, lbID string, ts []clb.Target) (string, error) {
	return c.writeTargets("RegisterTargets", lbID, ts, func(list *[]*clbsdk.Backend, t clb.Target) {
		if slices.ContainsFunc(*list, func(b *clbsdk.Backend) bool { return is(b, t) }) {
			return
		}
		b := &clbsdk.Backend{Type: clb.Ptr("ENI"), InstanceId: clb.Ptr(t.InstanceID), Port: clb.Ptr(t.Port), Weight: clb.Ptr(int64(10))}
		if t.InstanceID != "" {
			b.Type = clb.Ptr("CVM")
		} else {
			b.PrivateIpAddresses = []*string{clb.Ptr(t.EniIP)}
		}
		if t.Weight != nil {
			b.Weight = clb.Ptr(*t.Weight)
		}
		*list = append(*list, b)
	})
}

// DeregisterTargets unbinds targets; ones not bound are ignored.
func (c *Cloud) DeregisterTargets(_ context.Context, lbID string, ts []clb.Target) (string, error) {
	return c.writeTargets("DeregisterTargets", lbID, ts, func(list *[]*clbsdk.Backend, t clb.Target) {
		*list = slices.DeleteFunc(*list, func(b *clbsdk.Backend) bool { return is(b, t) })
	})
}

// ModifyTargetWeight sets the weights of bound targets.
func (c *Cloud) ModifyTargetWeight(_ context.Context, lbID string, ts []clb.Target) (string, error) {
	return c.writeTargets("ModifyTargetWeight", lbID, ts, func(list *[]*clbsdk.Backend, t clb.Target) {
		for _, b := range *list {
			if is(b, t) && t.Weight != nil {
				b.Weight = clb.Ptr(*t.Weight)
			}
		}
	})
}
