// Package fake is an in-memory CLB region for the controllers' unit tests:
// load balancers with their listeners, the writes made to them, and errors
// to inject. It answers as the client does, without its rate limits,
// batching or tasks.
package fake

import (
	"context"
	"fmt"
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
	Task   clb.TaskState
	writes []string
	seq    int
}

// New is a region holding running load balancers with ids.
func New(ids ...string) *Cloud {
	c := &Cloud{Task: clb.TaskSucceeded, Quota: 50, LBs: map[string]*clbsdk.LoadBalancer{}, Listeners: map[string][]*clbsdk.Listener{}, Errs: map[string]error{}}
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

// Log is the writes made, sorted: load balancers are written in parallel.
func (c *Cloud) Log() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.writes)
	slices.Sort(out)
	return out
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
