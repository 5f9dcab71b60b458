package clb

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// hideCreatedIDs answers CreateLoadBalancer with LoadBalancerIds null, as
// the real API may when creation is delayed.
type hideCreatedIDs struct{ next http.RoundTripper }

func (h hideCreatedIDs) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.next.RoundTrip(r)
	if err != nil || r.Header.Get("X-TC-Action") != "CreateLoadBalancer" {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var env map[string]map[string]any
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, err
	}
	env["Response"]["LoadBalancerIds"] = nil
	body, err = json.Marshal(env)
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return resp, nil
}

func TestCreateLoadBalancerReadsDelayedIDsFromTask(t *testing.T) {
	tr := tcapi.NewTransport()
	e, c := start(t, emulator.DefaultConfig(), Options{Transport: hideCreatedIDs{next: tr}})
	t.Cleanup(tr.CloseIdleConnections) // before the emulator closes
	req := clbsdk.NewCreateLoadBalancerRequest()
	req.LoadBalancerType = Ptr("OPEN")
	ids, task, err := c.CreateLoadBalancer(testCtx(t), req)
	must(t, err)
	inv := e.Inventory()
	if len(inv.LoadBalancers) != 1 || len(ids) != 1 || ids[0] != inv.LoadBalancers[0].ID {
		t.Fatalf("ids = %v, inventory = %+v", ids, inv.LoadBalancers)
	}
	if e.CallCount("DescribeTaskStatus") == 0 {
		t.Fatal("the ids did not come from DescribeTaskStatus")
	}
	if st := waitTask(t, c, task); st != TaskSucceeded {
		t.Fatalf("task %s", st)
	}
}

func TestFindLoadBalancersByNameIsExact(t *testing.T) {
	_, c := start(t, emulator.DefaultConfig(), Options{})
	ids := map[string]string{}
	for _, name := range []string{"imp", "imp-2"} {
		req := clbsdk.NewCreateLoadBalancerRequest()
		req.LoadBalancerType, req.LoadBalancerName = Ptr("OPEN"), Ptr(name)
		got, _, err := c.CreateLoadBalancer(testCtx(t), req)
		must(t, err)
		ids[name] = got[0]
	}
	// The API matches "imp" in both names; only the exact one is returned.
	found, err := c.FindLoadBalancersByName(testCtx(t), "imp")
	must(t, err)
	if len(found) != 1 || Deref(found[0].LoadBalancerId) != ids["imp"] {
		t.Fatalf("found %d load balancers named imp, want only %s", len(found), ids["imp"])
	}
	if found, err := c.FindLoadBalancersByName(testCtx(t), "im"); err != nil || len(found) != 0 {
		t.Fatalf("found %d load balancers named im (err %v), want none", len(found), err)
	}
}
