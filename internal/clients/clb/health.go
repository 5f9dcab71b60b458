package clb

import (
	"context"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
)

// DescribeListenerHealth returns the load balancer's health check verdict
// on every target of one listener (an L4 listener reports through one
// rule). Concurrent calls for listeners of one load balancer are answered
// by one DescribeTargetHealth per 100 listeners; a listener missing from
// the answer is a NotFound error.
func (c *Client) DescribeListenerHealth(ctx context.Context, lbID, listenerID string) (*clbsdk.ListenerHealth, error) {
	if lbID == "" || listenerID == "" {
		return nil, localErr(opTargetHealth, Invalid, "a load balancer id and a listener id are needed")
	}
	h, err := c.health.Do(ctx, lbID, listenerID)
	return h, wrapErr(opTargetHealth, err)
}

const opTargetHealth = "describe target health"

func healthIDOf(l *clbsdk.ListenerHealth) *string { return l.ListenerId }

// describeHealthIDs sends one DescribeTargetHealth for listeners of one
// load balancer.
func (c *Client) describeHealthIDs(ctx context.Context, lbID string, ids []string) ([]*clbsdk.ListenerHealth, error) {
	req := clbsdk.NewDescribeTargetHealthRequest()
	req.LoadBalancerIds = []*string{&lbID}
	req.ListenerIds = ptrs(ids)
	resp, _, err := call(ctx, c, opTargetHealth, actionTargetHealth, req, c.sdk.DescribeTargetHealthWithContext)
	if err != nil {
		return nil, err
	}
	for _, lb := range resp.Response.LoadBalancers {
		if lb != nil && Deref(lb.LoadBalancerId) == lbID {
			return lb.Listeners, nil
		}
	}
	return nil, nil
}
