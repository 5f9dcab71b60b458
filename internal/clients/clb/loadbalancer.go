package clb

import (
	"context"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
)

// CreateLoadBalancer creates load balancers as req describes and returns
// their ids and the task id. Set req.ClientToken (e.g. to the managed
// resource's UID): repeating the call with the same token returns the same
// load balancers instead of creating more.
//
// When the API delays creation it may not name the ids; they are then
// read from DescribeTaskStatus. If that does not know them yet either, ids
// is empty: repeat the call with the same ClientToken later, or find the
// load balancer by its tags.
func (c *Client) CreateLoadBalancer(ctx context.Context, req *clbsdk.CreateLoadBalancerRequest) (ids []string, task string, err error) {
	const op = "create load balancer"
	if req == nil {
		return nil, "", localErr(op, Invalid, "no request given")
	}
	resp, task, err := call(ctx, c, op, "CreateLoadBalancer", req, c.sdk.CreateLoadBalancerWithContext)
	if err != nil {
		return nil, "", err
	}
	ids = strs(resp.Response.LoadBalancerIds)
	if len(ids) == 0 {
		ids = c.taskLoadBalancers(ctx, task, Deref(resp.Response.DealName))
	}
	// The new load balancers refuse writes until creation ends.
	c.s.tasks.remember(task, c.s.clock(), ids...)
	return ids, task, nil
}

// taskLoadBalancers asks DescribeTaskStatus for the load balancers of a
// creation task, by task id and then by order number. Errors only mean the
// ids stay unknown for now.
func (c *Client) taskLoadBalancers(ctx context.Context, task, deal string) []string {
	try := func(set func(*clbsdk.DescribeTaskStatusRequest)) []string {
		req := clbsdk.NewDescribeTaskStatusRequest()
		set(req)
		resp, err := invoke(ctx, c, "DescribeTaskStatus", req, c.sdk.DescribeTaskStatusWithContext)
		if err != nil || resp.Response == nil {
			return nil
		}
		return strs(resp.Response.LoadBalancerIds)
	}
	var ids []string
	if task != "" {
		ids = try(func(r *clbsdk.DescribeTaskStatusRequest) { r.TaskId = &task })
	}
	if len(ids) == 0 && deal != "" {
		ids = try(func(r *clbsdk.DescribeTaskStatusRequest) { r.DealName = &deal })
	}
	return ids
}

// FindLoadBalancersByTag returns every load balancer of the region tagged
// key=value, e.g. to adopt one whose creation answer was lost.
func (c *Client) FindLoadBalancersByTag(ctx context.Context, key, value string) ([]*clbsdk.LoadBalancer, error) {
	const op = "find load balancers by tag"
	if key == "" {
		return nil, localErr(op, Invalid, "no tag key given")
	}
	var out []*clbsdk.LoadBalancer
	for offset := int64(0); ; offset += MaxDescribeLBPage {
		req := clbsdk.NewDescribeLoadBalancersRequest()
		req.Filters = []*clbsdk.Filter{{Name: Ptr("tag:" + key), Values: []*string{&value}}}
		req.Offset, req.Limit = Ptr(offset), Ptr(int64(MaxDescribeLBPage))
		resp, _, err := call(ctx, c, op, actionDescribeLBs, req, c.sdk.DescribeLoadBalancersWithContext)
		if err != nil {
			return nil, err
		}
		page := resp.Response.LoadBalancerSet
		out = append(out, page...)
		total := uint64(0)
		if resp.Response.TotalCount != nil {
			total = *resp.Response.TotalCount
		}
		if len(page) < MaxDescribeLBPage || uint64(len(out)) >= total {
			return out, nil
		}
	}
}

// FindLoadBalancersByName returns every load balancer of the region whose
// name is exactly name. The API matches names by substring, so its answer
// is filtered here.
func (c *Client) FindLoadBalancersByName(ctx context.Context, name string) ([]*clbsdk.LoadBalancer, error) {
	const op = "find load balancers by name"
	if name == "" {
		return nil, localErr(op, Invalid, "no name given")
	}
	var out []*clbsdk.LoadBalancer
	seen := 0
	for offset := int64(0); ; offset += MaxDescribeLBPage {
		req := clbsdk.NewDescribeLoadBalancersRequest()
		req.LoadBalancerName = &name
		req.Offset, req.Limit = Ptr(offset), Ptr(int64(MaxDescribeLBPage))
		resp, _, err := call(ctx, c, op, actionDescribeLBs, req, c.sdk.DescribeLoadBalancersWithContext)
		if err != nil {
			return nil, err
		}
		page := resp.Response.LoadBalancerSet
		for _, lb := range page {
			if lb != nil && Deref(lb.LoadBalancerName) == name {
				out = append(out, lb)
			}
		}
		seen += len(page)
		total := uint64(0)
		if resp.Response.TotalCount != nil {
			total = *resp.Response.TotalCount
		}
		if len(page) < MaxDescribeLBPage || uint64(seen) >= total {
			return out, nil
		}
	}
}

// DescribeLoadBalancer returns one load balancer, or a NotFound error.
// Concurrent calls are answered by one DescribeLoadBalancers per 20 ids.
func (c *Client) DescribeLoadBalancer(ctx context.Context, id string) (*clbsdk.LoadBalancer, error) {
	if id == "" {
		return nil, localErr(opDescribeLB, Invalid, "no load balancer id given")
	}
	lb, err := c.lbs.Do(ctx, "", id)
	return lb, wrapErr(opDescribeLB, err)
}

const opDescribeLB = "describe load balancer"

func lbIDOf(lb *clbsdk.LoadBalancer) *string { return lb.LoadBalancerId }

func missingLB(_, id string) string { return "load balancer " + id + " does not exist" }

// describeLBIDs sends one DescribeLoadBalancers for up to 20 ids; the key
// is unused (load balancers span no key).
func (c *Client) describeLBIDs(ctx context.Context, _ string, ids []string) ([]*clbsdk.LoadBalancer, error) {
	req := clbsdk.NewDescribeLoadBalancersRequest()
	req.LoadBalancerIds = ptrs(ids)
	req.Limit = Ptr(int64(len(ids)))
	resp, _, err := call(ctx, c, opDescribeLB, actionDescribeLBs, req, c.sdk.DescribeLoadBalancersWithContext)
	if err != nil {
		return nil, err
	}
	return resp.Response.LoadBalancerSet, nil
}

// DeleteLoadBalancer deletes one load balancer with its listeners, rules
// and targets, and returns the task id. It sets ForceDelete: the API's
// safety checks (20 or more bound targets, recent traffic, many recent
// deletions) would otherwise block a deletion the user asked for, with no
// way to resolve it from a managed resource. Deletion protection still
// applies. A missing load balancer is a NotFound error, which callers treat
// as done.
func (c *Client) DeleteLoadBalancer(ctx context.Context, id string) (string, error) {
	const op, action = "delete load balancer", "DeleteLoadBalancer"
	req := clbsdk.NewDeleteLoadBalancerRequest()
	req.LoadBalancerIds = []*string{&id}
	req.ForceDelete = Ptr(true)
	_, task, err := writeCall(ctx, c, op, action, id, req, c.sdk.DeleteLoadBalancerWithContext)
	return task, err
}

// ModifyLoadBalancerAttributes changes the attributes of the load
// balancer req names and returns the task id.
func (c *Client) ModifyLoadBalancerAttributes(ctx context.Context, req *clbsdk.ModifyLoadBalancerAttributesRequest) (string, error) {
	const op, action = "modify load balancer attributes", "ModifyLoadBalancerAttributes"
	if req == nil {
		return "", localErr(op, Invalid, "no request given")
	}
	_, task, err := writeCall(ctx, c, op, action, Deref(req.LoadBalancerId), req, c.sdk.ModifyLoadBalancerAttributesWithContext)
	return task, err
}

// DescribeQuota returns the CLB quotas of the region.
// ListenerQuotaID is the DescribeQuota entry of listeners per load
// balancer.
const ListenerQuotaID = "TOTAL_LISTENER_QUOTA"

func (c *Client) DescribeQuota(ctx context.Context) ([]*clbsdk.Quota, error) {
	const op = "describe quota"
	resp, _, err := call(ctx, c, op, "DescribeQuota", clbsdk.NewDescribeQuotaRequest(), c.sdk.DescribeQuotaWithContext)
	if err != nil {
		return nil, err
	}
	return resp.Response.QuotaSet, nil
}
