package clb

import (
	"context"
	"strconv"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
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
	if len(req.Ports) > maxCreateListenerPorts {
		return nil, "", localErr(op, Invalid, "at most "+strconv.Itoa(maxCreateListenerPorts)+
			" ports can be created per call, got "+strconv.Itoa(len(req.Ports)))
	}
	task, err = c.write(ctx, op, action, str(req.LoadBalancerId), func(ctx context.Context) (string, error) {
		resp, err := invoke(ctx, c, action, req, c.sdk.CreateListenerWithContext)
		if err != nil {
			return "", err
		}
		if resp.Response == nil {
			return "", errEmptyAnswer(op)
		}
		ids = strs(resp.Response.ListenerIds)
		return str(resp.Response.RequestId), nil
	})
	if err != nil {
		return nil, "", err
	}
	return ids, task, nil
}

// DescribeListener returns one listener of a load balancer, or a NotFound
// error when the load balancer or the listener does not exist. Concurrent
// calls for one load balancer are answered by one DescribeListeners.
func (c *Client) DescribeListener(ctx context.Context, lbID, listenerID string) (*clbsdk.Listener, error) {
	const op = "describe listener"
	if lbID == "" || listenerID == "" {
		return nil, localErr(op, Invalid, "a load balancer id and a listener id are needed")
	}
	l, err := c.listeners.Do(ctx, lbID, listenerID)
	return l, wrapErr(op, err)
}

func (c *Client) flushDescribeListeners(lbID string, reqs []*tcapi.Pending[string, *clbsdk.Listener]) {
	const op, action = "describe listener", "DescribeListeners"
	ctx, cancel := c.flushContext()
	defer cancel()
	keys, byID := tcapi.GroupByInput(tcapi.Live(reqs))
	tcapi.CallIsolating(keys, maxDescribeListenerIDs, classifyCode, func(ids []string) error {
		req := clbsdk.NewDescribeListenersRequest()
		req.LoadBalancerId = &lbID
		req.ListenerIds = ptrs(ids)
		c.s.api.Metrics.BatchSize.WithLabelValues(action).Observe(float64(len(ids)))
		resp, err := invoke(ctx, c, action, req, c.sdk.DescribeListenersWithContext)
		if err != nil {
			return wrapErr(op, err)
		}
		if resp.Response == nil {
			return errEmptyAnswer(op)
		}
		found := map[string]*clbsdk.Listener{}
		for _, l := range resp.Response.Listeners {
			if l != nil && l.ListenerId != nil {
				found[*l.ListenerId] = l
			}
		}
		for _, id := range ids {
			l := found[id]
			for _, p := range byID[id] {
				if l == nil {
					p.Reply(nil, localErr(op, NotFound, "listener "+id+" of load balancer "+lbID+" does not exist"))
				} else {
					p.Reply(l, nil)
				}
			}
		}
		return nil
	}, func(ids []string, err error) { tcapi.ReplyAll(byID, ids, err) })
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
	resp, err := invoke(ctx, c, "DescribeListeners", req, c.sdk.DescribeListenersWithContext)
	if err != nil {
		return nil, wrapErr(op, err)
	}
	if resp.Response == nil {
		return nil, errEmptyAnswer(op)
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
	return c.write(ctx, op, action, str(req.LoadBalancerId), func(ctx context.Context) (string, error) {
		resp, err := invoke(ctx, c, action, req, c.sdk.ModifyListenerWithContext)
		if err != nil {
			return "", err
		}
		if resp.Response == nil {
			return "", errEmptyAnswer(op)
		}
		return str(resp.Response.RequestId), nil
	})
}

// DeleteListener deletes one listener and returns the task id. A missing
// listener or load balancer is a NotFound error.
func (c *Client) DeleteListener(ctx context.Context, lbID, listenerID string) (string, error) {
	const op, action = "delete listener", "DeleteListener"
	if listenerID == "" {
		return "", localErr(op, Invalid, "no listener id given")
	}
	return c.write(ctx, op, action, lbID, func(ctx context.Context) (string, error) {
		req := clbsdk.NewDeleteListenerRequest()
		req.LoadBalancerId, req.ListenerId = &lbID, &listenerID
		resp, err := invoke(ctx, c, action, req, c.sdk.DeleteListenerWithContext)
		if err != nil {
			return "", err
		}
		if resp.Response == nil {
			return "", errEmptyAnswer(op)
		}
		return str(resp.Response.RequestId), nil
	})
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
	case len(listenerIDs) > maxDeleteListenerIDs:
		return "", localErr(op, Invalid, "at most "+strconv.Itoa(maxDeleteListenerIDs)+
			" listeners can be deleted per call, got "+strconv.Itoa(len(listenerIDs)))
	}
	return c.write(ctx, op, action, lbID, func(ctx context.Context) (string, error) {
		req := clbsdk.NewDeleteLoadBalancerListenersRequest()
		req.LoadBalancerId = &lbID
		req.ListenerIds = ptrs(listenerIDs)
		resp, err := invoke(ctx, c, action, req, c.sdk.DeleteLoadBalancerListenersWithContext)
		if err != nil {
			return "", err
		}
		if resp.Response == nil {
			return "", errEmptyAnswer(op)
		}
		return str(resp.Response.RequestId), nil
	})
}
