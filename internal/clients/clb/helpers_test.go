package clb

import (
	"context"
	"testing"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

// testConfig is the Config of the emulator's default key pair at endpoint.
func testConfig(endpoint string) clients.Config {
	return clients.Config{
		SecretID: emulator.DefaultSecretID, SecretKey: emulator.DefaultSecretKey,
		Region: emulator.DefaultRegion, Endpoint: endpoint, Scheme: "http",
	}
}

// start serves an emulator with cfg and returns it with a client from a
// fresh pool built with o.
func start(t *testing.T, cfg emulator.Config, o Options) (*emulator.Emulator, *Client) {
	t.Helper()
	e, endpoint := emulatortest.Start(t, cfg)
	c, err := newTestPool(t, o).Client(testConfig(endpoint))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return e, c
}

// newTestPool is NewPool whose idle connections are closed when the test
// ends, before the emulator shuts down: http.Server.Shutdown waits for a
// connection that was dialled but never carried a request, and the
// transport sometimes dials one more than it ends up using.
func newTestPool(t *testing.T, o Options) *Pool {
	t.Helper()
	if o.Transport == nil {
		tr := tcapi.NewTransport()
		o.Transport = tr
		t.Cleanup(tr.CloseIdleConnections)
	}
	return NewPool(o)
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// waitTask polls TaskStatus until the task ends and returns its state.
func waitTask(t *testing.T, c *Client, task string) TaskState {
	t.Helper()
	ctx := testCtx(t)
	for {
		st, _, err := c.TaskStatus(ctx, task)
		must(t, err)
		if st != TaskRunning {
			return st
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// createLB creates an OPEN load balancer and waits for it to be ready.
func createLB(t *testing.T, c *Client, name string) string {
	t.Helper()
	req := clbsdk.NewCreateLoadBalancerRequest()
	req.LoadBalancerType = Ptr("OPEN")
	req.LoadBalancerName = &name
	ids, task, err := c.CreateLoadBalancer(testCtx(t), req)
	must(t, err)
	if len(ids) != 1 || task == "" {
		t.Fatalf("CreateLoadBalancer = %v, %q; want one id and a task", ids, task)
	}
	if st := waitTask(t, c, task); st != TaskSucceeded {
		t.Fatalf("create task %s", st)
	}
	return ids[0]
}

// createListeners creates one listener per port and waits for the task.
func createListeners(t *testing.T, c *Client, lbID, protocol string, ports ...int64) []string {
	t.Helper()
	ids, task, err := c.CreateListener(testCtx(t), listenerRequest(lbID, protocol, ports...))
	must(t, err)
	if st := waitTask(t, c, task); st != TaskSucceeded {
		t.Fatalf("create listener task %s", st)
	}
	return ids
}

func listenerRequest(lbID, protocol string, ports ...int64) *clbsdk.CreateListenerRequest {
	req := clbsdk.NewCreateListenerRequest()
	req.LoadBalancerId = &lbID
	req.Protocol = &protocol
	for _, p := range ports {
		req.Ports = append(req.Ports, Ptr(p))
	}
	return req
}
