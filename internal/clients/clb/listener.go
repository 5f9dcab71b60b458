package clb

import (
	"context"
	"strconv"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
)

// CreateListener creates one listener per port of req and returns their
// ids (in the order of req.Ports) and the task id. The API takes fewer than
// 50 ports per call; a longer request is refused as Invalid rather than
// split here, because a second call would find the load balancer busy with
// the first one's task. Callers split, and send the next part once the
// task has ended.
func (c *Client) CreateListener(ctx context.Context, req *clbsdk.CreateListenerRequest) (ids []string, task string, err error) {
	const op, action = "create listener", "CreateListener"
	if req == nil {
		return nil, "", localErr(op, Invalid, "no request given")
	}
	if len(req.Ports) > MaxCreateListenerPorts {
		return nil, "", localErr(op, Invalid, "at most "+strconv.Itoa(MaxCreateListenerPorts)+
			" ports can be created per call, got "+strconv.Itoa(len(req.Ports)))
	}
	resp, task, err := writeCall(ctx, c, op, action, Deref(req.LoadBalancerId), req, c.sdk.CreateListenerWithContext)
	if err != nil {
		return nil, "", err
	}
	return strs(resp.Response.ListenerIds), task, nil
}

// DescribeListener returns one listener of a load balancer, or a NotFound
// error when the load balancer or the listener does not exist. Concurrent
// calls for one load balancer are answered by one DescribeListeners.
func (c *Client) DescribeListener(ctx context.Context, lbID, listenerID string) (*clbsdk.Listener, error) {
	if lbID == "" || listenerID == "" {
		return nil, localErr(opDescribeListener, Invalid, "a load balancer id and a listener id are needed")
	}
	l, err := c.listeners.Do(ctx, lbID, listenerID)
	return l, wrapErr(opDescribeListener, err)
}

const opDescribeListener = "describe listener"

func listenerIDOf(l *clbsdk.Listener) *string { return l.ListenerId }

// describeListenerIDs sends one DescribeListeners for up to 100 ids.
func (c *Client) describeListenerIDs(ctx context.Context, lbID string, ids []string) ([]*clbsdk.Listener, error) {
	req := clbsdk.NewDescribeListenersRequest()
	req.LoadBalancerId, req.ListenerIds = &lbID, ptrs(ids)
	resp, _, err := call(ctx, c, opDescribeListener, actionDescribeListeners, req, c.sdk.DescribeListenersWithContext)
	if err != nil {
		return nil, err
	}
	return resp.Response.Listeners, nil
}

// DescribeListeners returns the listeners of a load balancer, optionally
// only those of protocol ("" for any) and port (0 for any).
func (c *Client) DescribeListeners(ctx context.Context, lbID, protocol string, port int64) ([]*clbsdk.Listener, error) {
	const op = "describe listeners"
	if lbID == "" {
		return nil, localErr(op, Invalid, "no load balancer id given")
	}
	req := clbsdk.NewDescribeListenersRequest()
	req.LoadBalancerId = &lbID
	if protocol != "" {
		req.Protocol = &protocol
	}
	if port != 0 {
		req.Port = &port
	}
	resp, _, err := call(ctx, c, op, actionDescribeListeners, req, c.sdk.DescribeListenersWithContext)
	if err != nil {
		return nil, err
	}
	return resp.Response.Listeners, nil
}

// ModifyListener changes the listener req names and returns the task id.
// Port and protocol cannot change; that takes a new listener.
func (c *Client) ModifyListener(ctx context.Context, req *clbsdk.ModifyListenerRequest) (string, error) {
	const op, action = "modify listener", "ModifyListener"
	if req == nil {
		return "", localErr(op, Invalid, "no request given")
	}
	_, task, err := writeCall(ctx, c, op, action, Deref(req.LoadBalancerId), req, c.sdk.ModifyListenerWithContext)
	return task, err
}

// DeleteListener deletes one listener and returns the task id. A missing
// listener or load balancer is a NotFound error.
func (c *Client) DeleteListener(ctx context.Context, lbID, listenerID string) (string, error) {
	const op, action = "delete listener", "DeleteListener"
	if listenerID == "" {
		return "", localErr(op, Invalid, "no listener id given")
	}
	req := clbsdk.NewDeleteListenerRequest()
	req.LoadBalancerId, req.ListenerId = &lbID, &listenerID
	_, task, err := writeCall(ctx, c, op, action, lbID, req, c.sdk.DeleteListenerWithContext)
	return task, err
}

// DeleteListeners deletes up to 20 listeners of one load balancer in one
// task. An empty list is refused: the API would delete every listener.
// If any id does not exist the API deletes nothing and answers
// InvalidParameter (not a not-found code), so callers should pass ids they
// have just seen.
func (c *Client) DeleteListeners(ctx context.Context, lbID string, listenerIDs []string) (string, error) {
	const op, action = "delete listeners", "DeleteLoadBalancerListeners"
	switch {
	case len(listenerIDs) == 0:
		return "", localErr(op, Invalid, "no listener ids given")
	case len(listenerIDs) > MaxDeleteListenerIDs:
		return "", localErr(op, Invalid, "at most "+strconv.Itoa(MaxDeleteListenerIDs)+
			" listeners can be deleted per call, got "+strconv.Itoa(len(listenerIDs)))
	}
	req := clbsdk.NewDeleteLoadBalancerListenersRequest()
	req.LoadBalancerId = &lbID
	req.ListenerIds = ptrs(listenerIDs)
	_, task, err := writeCall(ctx, c, op, action, lbID, req, c.sdk.DeleteLoadBalancerListenersWithContext)
	return task, err
}
