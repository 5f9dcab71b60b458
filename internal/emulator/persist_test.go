package emulator_test

import (
	"path/filepath"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

func TestPersistenceAcrossRestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cloud.json")
	cfg := instant()
	cfg.StateFile = file

	e1, endpoint1, err := emulator.Start(cfg)
	must(t, err)
	c1 := emulatortest.DefaultClient(t, endpoint1)
	lb := createLB(t, c1, "durable")
	l := createListeners(t, c1, lb, "TCP", 80)[0]
	reg := clb.NewRegisterTargetsRequest()
	reg.LoadBalancerId, reg.ListenerId, reg.Targets = &lb, &l, []*clb.Target{eni("10.0.0.1", 8080)}
	rresp, err := c1.RegisterTargets(reg)
	must(t, err)
	token := clb.NewCreateLoadBalancerRequest()
	token.LoadBalancerType, token.ClientToken = common.StringPtr("OPEN"), common.StringPtr("persisted-token")
	tresp, err := c1.CreateLoadBalancer(token)
	must(t, err)
	before := e1.Inventory()
	must(t, e1.Close())

	e2, endpoint2 := emulatortest.Start(t, cfg)
	c2 := emulatortest.DefaultClient(t, endpoint2)
	after := e2.Inventory()
	if len(after.LoadBalancers) != 2 || after.Listeners() != before.Listeners() {
		t.Fatalf("restored inventory %+v, had %+v", after, before)
	}
	got, _ := after.LoadBalancer(lb)
	want, _ := before.LoadBalancer(lb)
	if got.VIP != want.VIP || len(got.Listeners) != 1 || len(got.Listeners[0].Targets) != 1 || got.Listeners[0].Targets[0].IP != "10.0.0.1" {
		t.Fatalf("restored %+v, want %+v", got, want)
	}
	// Old task ids still answer, ids are not reused, tokens still hold.
	if s := waitTask(t, c2, *rresp.Response.RequestId); s != 0 {
		t.Fatalf("restored task status %d", s)
	}
	// A fresh request: an SDK request object remembers the endpoint it was first sent to.
	token2 := clb.NewCreateLoadBalancerRequest()
	token2.LoadBalancerType, token2.ClientToken = common.StringPtr("OPEN"), common.StringPtr("persisted-token")
	again, err := c2.CreateLoadBalancer(token2)
	must(t, err)
	if *again.Response.LoadBalancerIds[0] != *tresp.Response.LoadBalancerIds[0] {
		t.Fatalf("ClientToken forgotten across restart")
	}
	newLB := createLB(t, c2, "fresh")
	if n, _ := e2.Inventory().LoadBalancer(newLB); n.VIP == got.VIP {
		t.Fatalf("a new load balancer took the VIP %s of a restored one", n.VIP)
	}
	createListeners(t, c2, lb, "TCP", 81) // the restored load balancer is writable

	// Changes are written in the background, not only on Close.
	deadline := time.Now().Add(5 * time.Second)
	for {
		e3, err := emulator.New(emulator.Config{StateFile: file})
		must(t, err)
		n := len(e3.Inventory().LoadBalancers)
		must(t, e3.Close())
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state file still holds %d load balancers", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
