package clb

import (
	"testing"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// TestWriteMethods runs every write wrapper once against the emulator
// (tasks finish at once) and checks the cloud's state after each.
func TestWriteMethods(t *testing.T) {
	e, c := start(t, emulator.Config{}, Options{})
	ctx := testCtx(t)
	lb := createLB(t, c, "api")
	inv := func() emulator.InventoryLoadBalancer {
		t.Helper()
		l, ok := e.Inventory().LoadBalancer(lb)
		if !ok {
			t.Fatalf("%s is gone", lb)
		}
		return l
	}

	mod := clbsdk.NewModifyLoadBalancerAttributesRequest()
	mod.LoadBalancerId, mod.LoadBalancerName = &lb, Ptr("api-renamed")
	_, err := c.ModifyLoadBalancerAttributes(ctx, mod)
	must(t, err)
	if inv().Name != "api-renamed" {
		t.Fatalf("name = %q", inv().Name)
	}

	l4 := createListeners(t, c, lb, "TCP", 80, 81, 82)
	ml := clbsdk.NewModifyListenerRequest()
	ml.LoadBalancerId, ml.ListenerId, ml.ListenerName = &lb, &l4[0], Ptr("renamed")
	_, err = c.ModifyListener(ctx, ml)
	must(t, err)
	got, err := c.DescribeListener(ctx, lb, l4[0])
	must(t, err)
	if Deref(got.ListenerName) != "renamed" {
		t.Fatalf("listener name = %q", Deref(got.ListenerName))
	}
	tcp, err := c.DescribeListeners(ctx, lb, "TCP", 81)
	must(t, err)
	if len(tcp) != 1 || Deref(tcp[0].ListenerId) != l4[1] {
		t.Fatalf("DescribeListeners(TCP, 81) = %d listeners", len(tcp))
	}

	// Weights: bind two targets, then change both in one task.
	targets := []Target{
		{ListenerID: l4[0], EniIP: "10.0.0.1", Port: 80},
		{ListenerID: l4[1], InstanceID: "ins-abcdefgh", Port: 80},
	}
	_, err = c.RegisterTargets(ctx, lb, targets)
	must(t, err)
	for i := range targets {
		targets[i].Weight = Ptr(int64(42))
	}
	_, err = c.ModifyTargetWeight(ctx, lb, targets)
	must(t, err)
	for _, l := range inv().Listeners[:2] {
		if len(l.Targets) != 1 || l.Targets[0].Weight != 42 {
			t.Fatalf("listener %s targets %+v", l.ID, l.Targets)
		}
	}
	b, err := c.DescribeTargets(ctx, lb, l4[1])
	must(t, err)
	if len(b.Targets) != 1 || Deref(b.Targets[0].InstanceId) != "ins-abcdefgh" {
		t.Fatalf("targets of %s: %+v", l4[1], b.Targets)
	}
	if _, err := c.ModifyTargetWeight(ctx, lb, []Target{{ListenerID: l4[0], EniIP: "10.0.0.1", Port: 80}}); !IsInvalid(err) {
		t.Fatalf("a weight change without a weight: %v", err)
	}

	// L7 rules.
	http := createListeners(t, c, lb, "HTTP", 8080)[0]
	cr := clbsdk.NewCreateRuleRequest()
	cr.LoadBalancerId, cr.ListenerId = &lb, &http
	cr.Rules = []*clbsdk.RuleInput{{Domain: Ptr("example.com"), Url: Ptr("/a")}}
	locs, _, err := c.CreateRule(ctx, cr)
	must(t, err)
	if len(locs) != 1 {
		t.Fatalf("location ids %v", locs)
	}
	mr := clbsdk.NewModifyRuleRequest()
	mr.LoadBalancerId, mr.ListenerId, mr.LocationId, mr.Url = &lb, &http, &locs[0], Ptr("/b")
	_, err = c.ModifyRule(ctx, mr)
	must(t, err)
	_, err = c.RegisterTargets(ctx, lb, []Target{{ListenerID: http, LocationID: locs[0], EniIP: "10.0.0.9", Port: 8080}})
	must(t, err)
	rule := inv().Listeners[3].Rules[0]
	if rule.URL != "/b" || len(rule.Targets) != 1 {
		t.Fatalf("rule %+v", rule)
	}
	dr := clbsdk.NewDeleteRuleRequest()
	dr.LoadBalancerId, dr.ListenerId, dr.LocationIds = &lb, &http, []*string{&locs[0]}
	_, err = c.DeleteRule(ctx, dr)
	must(t, err)
	if _, err := c.DeleteRule(ctx, dr); !IsNotFound(err) {
		t.Fatalf("deleting a deleted rule: %v", err)
	}

	// Listeners, then the load balancer.
	_, err = c.DeleteListener(ctx, lb, http)
	must(t, err)
	_, err = c.DeleteListeners(ctx, lb, l4[1:])
	must(t, err)
	if n := len(inv().Listeners); n != 1 {
		t.Fatalf("%d listeners left, want 1", n)
	}
	quotas, err := c.DescribeQuota(ctx)
	must(t, err)
	if len(quotas) == 0 {
		t.Fatal("no quotas")
	}
	_, err = c.DeleteLoadBalancer(ctx, lb)
	must(t, err)
	if _, err := c.DescribeLoadBalancer(ctx, lb); !IsNotFound(err) {
		t.Fatalf("deleted load balancer: %v", err)
	}
	if n := len(e.Inventory().LoadBalancers); n != 0 {
		t.Fatalf("%d load balancers leaked", n)
	}
}
