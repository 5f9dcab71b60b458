package clb

import (
	"context"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
)

// CreateRule creates the L7 forwarding rules of req on an HTTP or HTTPS
// listener and returns their location ids and the task id.
func (c *Client) CreateRule(ctx context.Context, req *clbsdk.CreateRuleRequest) (locationIDs []string, task string, err error) {
	const op, action = "create rule", "CreateRule"
	if req == nil {
		return nil, "", localErr(op, Invalid, "no request given")
	}
	resp, task, err := writeCall(ctx, c, op, action, Deref(req.LoadBalancerId), req, c.sdk.CreateRuleWithContext)
	if err != nil {
		return nil, "", err
	}
	return strs(resp.Response.LocationIds), task, nil
}

// ModifyRule changes the rule req names and returns the task id.
func (c *Client) ModifyRule(ctx context.Context, req *clbsdk.ModifyRuleRequest) (string, error) {
	const op, action = "modify rule", "ModifyRule"
	if req == nil {
		return "", localErr(op, Invalid, "no request given")
	}
	_, task, err := writeCall(ctx, c, op, action, Deref(req.LoadBalancerId), req, c.sdk.ModifyRuleWithContext)
	return task, err
}

// DeleteRule deletes the rules req names (by location ids, or by domain and
// url) and returns the task id. A missing rule is a NotFound error.
func (c *Client) DeleteRule(ctx context.Context, req *clbsdk.DeleteRuleRequest) (string, error) {
	const op, action = "delete rule", "DeleteRule"
	if req == nil {
		return "", localErr(op, Invalid, "no request given")
	}
	_, task, err := writeCall(ctx, c, op, action, Deref(req.LoadBalancerId), req, c.sdk.DeleteRuleWithContext)
	return task, err
}
