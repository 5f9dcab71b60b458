package emulator_test

import (
	"errors"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	sdkerrors "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

// instant is the profile most tests use: tasks finish before the response
// and nothing throttles, so each test controls exactly what it exercises.
func instant() emulator.Config { return emulator.Config{} }

// env starts an emulator with cfg and returns it with a default SDK client.
func env(t *testing.T, cfg emulator.Config) (*emulator.Emulator, string, *clb.Client) {
	t.Helper()
	e, endpoint := emulatortest.Start(t, cfg)
	return e, endpoint, emulatortest.DefaultClient(t, endpoint)
}

// code extracts the API error code from an SDK error ("" for nil).
func code(err error) string {
	if err == nil {
		return ""
	}
	var sdkErr *sdkerrors.TencentCloudSDKError
	if errors.As(err, &sdkErr) {
		return sdkErr.GetCode()
	}
	return "non-SDK error: " + err.Error()
}

// wantCode fails the test unless err is an API error with code (and a
// RequestId); it returns the error message.
func wantCode(t *testing.T, err error, want string) string {
	t.Helper()
	if got := code(err); got != want {
		t.Fatalf("error code = %q, want %q (err: %v)", got, want, err)
	}
	var sdkErr *sdkerrors.TencentCloudSDKError
	if errors.As(err, &sdkErr) && sdkErr.GetRequestId() == "" {
		t.Fatalf("error %v carries no RequestId", err)
	}
	return sdkErr.GetMessage()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// waitTask polls DescribeTaskStatus until the task leaves Status 2.
func waitTask(t *testing.T, c *clb.Client, requestID string) int64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		req := clb.NewDescribeTaskStatusRequest()
		req.TaskId = common.StringPtr(requestID)
		resp, err := c.DescribeTaskStatus(req)
		must(t, err)
		if s := *resp.Response.Status; s != 2 {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still running after 10s", requestID)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// createLB creates one OPEN load balancer and waits until it is normal.
func createLB(t *testing.T, c *clb.Client, name string) string {
	t.Helper()
	req := clb.NewCreateLoadBalancerRequest()
	req.LoadBalancerType = common.StringPtr("OPEN")
	req.LoadBalancerName = common.StringPtr(name)
	resp, err := c.CreateLoadBalancer(req)
	must(t, err)
	if s := waitTask(t, c, *resp.Response.RequestId); s != 0 {
		t.Fatalf("CreateLoadBalancer task status %d", s)
	}
	return *resp.Response.LoadBalancerIds[0]
}

// createListeners creates listeners on ports and waits for the task.
func createListeners(t *testing.T, c *clb.Client, lbID, protocol string, ports ...int64) []string {
	t.Helper()
	req := clb.NewCreateListenerRequest()
	req.LoadBalancerId = common.StringPtr(lbID)
	req.Protocol = common.StringPtr(protocol)
	req.Ports = common.Int64Ptrs(ports)
	if protocol == "HTTPS" || protocol == "TCP_SSL" {
		req.Certificate = &clb.CertificateInput{CertId: common.StringPtr("cert1234")}
	}
	resp, err := c.CreateListener(req)
	must(t, err)
	if s := waitTask(t, c, *resp.Response.RequestId); s != 0 {
		t.Fatalf("CreateListener task status %d", s)
	}
	return common.StringValues(resp.Response.ListenerIds)
}

// describeListener returns the listener with id, or nil.
func describeListener(t *testing.T, c *clb.Client, lbID, id string) *clb.Listener {
	t.Helper()
	req := clb.NewDescribeListenersRequest()
	req.LoadBalancerId = common.StringPtr(lbID)
	req.ListenerIds = common.StringPtrs([]string{id})
	resp, err := c.DescribeListeners(req)
	must(t, err)
	if len(resp.Response.Listeners) == 0 {
		return nil
	}
	return resp.Response.Listeners[0]
}

// newClient builds an SDK client for the default key of secretID.
func newClient(t *testing.T, endpoint, secretID, region string) *clb.Client {
	t.Helper()
	key := emulator.DefaultSecretKey
	if secretID != emulator.DefaultSecretID {
		key = secretID + "-key"
	}
	return emulatortest.NewSDKClient(t, endpoint, secretID, key, region)
}
