package emulator_test

import (
	"fmt"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

func taskStatus(t *testing.T, c *clb.Client, id string) *clb.DescribeTaskStatusResponseParams {
	t.Helper()
	req := clb.NewDescribeTaskStatusRequest()
	req.TaskId = &id
	resp, err := c.DescribeTaskStatus(req)
	must(t, err)
	return resp.Response
}

func TestAsyncTaskFlowAndBusyLoadBalancer(t *testing.T) {
	cfg := instant()
	cfg.TaskDuration = 200 * time.Millisecond
	_, _, c := env(t, cfg)

	create := clb.NewCreateLoadBalancerRequest()
	create.LoadBalancerType = common.StringPtr("OPEN")
	cresp, err := c.CreateLoadBalancer(create)
	must(t, err)
	lb := *cresp.Response.LoadBalancerIds[0]

	st := taskStatus(t, c, *cresp.Response.RequestId)
	if *st.Status != 2 || len(st.LoadBalancerIds) != 1 || *st.LoadBalancerIds[0] != lb {
		t.Fatalf("fresh create task: status %d ids %v", *st.Status, common.StringValues(st.LoadBalancerIds))
	}
	if got := describeLBs(t, c, nil).LoadBalancerSet[0]; *got.Status != 0 {
		t.Fatalf("load balancer status %d while creating, want 0", *got.Status)
	}
	byDeal := clb.NewDescribeTaskStatusRequest()
	byDeal.DealName = cresp.Response.DealName
	dresp, err := c.DescribeTaskStatus(byDeal)
	must(t, err)
	if *dresp.Response.Status != 2 {
		t.Fatalf("task by DealName: status %d", *dresp.Response.Status)
	}

	// Writes to a load balancer with a running task are refused.
	_, err = c.CreateListener(newCreateListener(lb, "TCP", 80))
	msg := wantCode(t, err, clb.FAILEDOPERATION_RESOURCEINOPERATING)
	want := fmt.Sprintf("Loadbalancer(%s) is not in normal desState, maybe some tasks are being processed, please try later.", lb)
	if msg != want {
		t.Fatalf("message %q, want %q", msg, want)
	}

	if s := waitTask(t, c, *cresp.Response.RequestId); s != 0 {
		t.Fatalf("create task ended with %d", s)
	}
	if got := describeLBs(t, c, nil).LoadBalancerSet[0]; *got.Status != 1 {
		t.Fatalf("load balancer status %d after the task, want 1", *got.Status)
	}

	lresp, err := c.CreateListener(newCreateListener(lb, "TCP", 80))
	must(t, err)
	id := *lresp.Response.ListenerIds[0]
	if describeListener(t, c, lb, id) == nil {
		t.Fatalf("a listener is described as soon as CreateListener answers")
	}
	_, err = c.CreateListener(newCreateListener(lb, "TCP", 81))
	wantCode(t, err, clb.FAILEDOPERATION_RESOURCEINOPERATING)
	// Reads are never refused, and other load balancers are not affected.
	describeLBs(t, c, nil)
	started := time.Now()
	if s := waitTask(t, c, *lresp.Response.RequestId); s != 0 {
		t.Fatalf("listener task ended with %d", s)
	}
	if d := time.Since(started); d < 100*time.Millisecond {
		t.Fatalf("the task finished after %v, well before the 200ms task duration", d)
	}
	createListeners(t, c, lb, "TCP", 81)

	req := clb.NewDescribeTaskStatusRequest()
	req.TaskId = common.StringPtr("00000000-0000-4000-8000-000000000000")
	_, err = c.DescribeTaskStatus(req)
	wantCode(t, err, clb.INVALIDPARAMETER)
	_, err = c.DescribeTaskStatus(clb.NewDescribeTaskStatusRequest())
	wantCode(t, err, clb.MISSINGPARAMETER)
}

func TestPerActionTaskDuration(t *testing.T) {
	cfg := instant()
	cfg.ActionTaskDuration = map[string]time.Duration{"CreateListener": time.Hour}
	_, _, c := env(t, cfg)
	lb := createLB(t, c, "slow-listeners") // instant
	resp, err := c.CreateListener(newCreateListener(lb, "TCP", 80))
	must(t, err)
	if s := *taskStatus(t, c, *resp.Response.RequestId).Status; s != 2 {
		t.Fatalf("CreateListener task status %d, want 2 for an hour", s)
	}
}

func TestTaskFailureRollsBack(t *testing.T) {
	e, _, c := env(t, instant())
	lb := createLB(t, c, "fragile")
	keep := createListeners(t, c, lb, "TCP", 80)[0]
	must(t, e.SetFaults(emulator.Faults{TaskFailureRate: 1, TaskFailureActions: []string{"CreateListener", "DeleteListener", "CreateLoadBalancer"}}))

	resp, err := c.CreateListener(newCreateListener(lb, "TCP", 81))
	must(t, err)
	st := taskStatus(t, c, *resp.Response.RequestId)
	if *st.Status != 1 || st.Message == nil || *st.Message == "" {
		t.Fatalf("failed task: status %d message %v", *st.Status, st.Message)
	}
	if describeListener(t, c, lb, *resp.Response.ListenerIds[0]) != nil {
		t.Fatalf("the listener of a failed task is still there")
	}
	del := clb.NewDeleteListenerRequest()
	del.LoadBalancerId, del.ListenerId = &lb, &keep
	dresp, err := c.DeleteListener(del)
	must(t, err)
	if s := waitTask(t, c, *dresp.Response.RequestId); s != 1 {
		t.Fatalf("delete task status %d, want 1", s)
	}
	if describeListener(t, c, lb, keep) == nil {
		t.Fatalf("a failed delete removed the listener")
	}
	create := clb.NewCreateLoadBalancerRequest()
	create.LoadBalancerType = common.StringPtr("OPEN")
	cresp, err := c.CreateLoadBalancer(create)
	must(t, err)
	if s := waitTask(t, c, *cresp.Response.RequestId); s != 1 {
		t.Fatalf("create task status %d, want 1", s)
	}
	if _, ok := e.Inventory().LoadBalancer(*cresp.Response.LoadBalancerIds[0]); ok {
		t.Fatalf("a load balancer whose creation failed still exists")
	}

	// Faults cleared: the load balancer is writable again.
	must(t, e.SetFaults(emulator.Faults{}))
	createListeners(t, c, lb, "TCP", 81)
}
