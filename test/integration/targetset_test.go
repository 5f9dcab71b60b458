package integration

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

func eniTarget(ip string, port int64, weight ...int64) v1alpha1.Target {
	t := v1alpha1.Target{IP: ip, Port: port}
	if len(weight) > 0 {
		t.Weight = clb.Ptr(weight[0])
	}
	return t
}

func newTargetSet(ns, name, lbID, listenerID string, targets []v1alpha1.Target, mods ...func(*v1alpha1.TargetSet)) *v1alpha1.TargetSet {
	ts := &v1alpha1.TargetSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.TargetSetSpec{ForProvider: v1alpha1.TargetSetParameters{
			LoadBalancerID: clb.Ptr(lbID),
			ListenerID:     clb.Ptr(listenerID),
			Targets:        targets,
		}},
	}
	if listenerID == "" {
		ts.Spec.ForProvider.ListenerID = nil
	}
	for _, m := range mods {
		m(ts)
	}
	return ts
}

// inventoryTargets returns the targets of a listener (ruleID "") or of one
// of its rules in the emulated cloud, as "ip:port" → weight.
func inventoryTargets(lbID, listenerID, ruleID string) (map[string]int, bool) {
	lb, _ := inventoryLB(lbID)
	for _, l := range lb.Listeners {
		if l.ID != listenerID {
			continue
		}
		ts := l.Targets
		if ruleID != "" {
			found := false
			for _, r := range l.Rules {
				if r.ID == ruleID {
					ts, found = r.Targets, true
				}
			}
			if !found {
				return nil, false
			}
		}
		return targetMap(ts), true
	}
	return nil, false
}

func targetMap(ts []emulator.InventoryTarget) map[string]int {
	out := map[string]int{}
	for _, t := range ts {
		out[fmt.Sprintf("%s:%d", t.IP, t.Port)] = t.Weight
	}
	return out
}

// waitTargets waits until the cloud's targets of a listener or rule are
// exactly want.
func waitTargets(t *testing.T, lbID, listenerID, ruleID string, want map[string]int) {
	t.Helper()
	eventually(t, "targets of "+listenerID+"/"+ruleID, func() error {
		got, ok := inventoryTargets(lbID, listenerID, ruleID)
		if !ok {
			return errors.New("listener or rule not found")
		}
		if !maps.Equal(got, want) {
			return errors.Errorf("targets %v, want %v", got, want)
		}
		return nil
	})
}

// sdkRegister binds ENI targets to a listener behind the provider's back.
func sdkRegister(t *testing.T, lbID, listenerID string, weight int64, ips ...string) {
	t.Helper()
	req := clbsdk.NewBatchRegisterTargetsRequest()
	req.LoadBalancerId = &lbID
	for _, ip := range ips {
		req.Targets = append(req.Targets, &clbsdk.BatchTarget{ListenerId: &listenerID, EniIp: clb.Ptr(ip),
			Port: clb.Ptr(int64(9000)), Weight: clb.Ptr(weight)})
	}
	eventually(t, "register targets behind the provider's back", func() error {
		resp, err := sdk(t).BatchRegisterTargets(req)
		if err != nil {
			return err
		}
		if len(resp.Response.FailListenerIdSet) > 0 {
			return errors.Errorf("refused: %s", clb.Deref(resp.Response.Message))
		}
		return nil
	})
}

// callsOf sums the emulator's answered calls of action, whatever their result.
func callsOf(action string) int { return cloud.CallCount(action) }

func TestTargetSetLifecycle(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "TCP", 9000)

	cr := newTargetSet(ns, "game", lbID, lisID, []v1alpha1.Target{
		eniTarget("10.0.0.1", 9000), eniTarget("10.0.0.2", 9000, 20), eniTarget("10.0.0.3", 9000, 0),
	})
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	if got := meta.GetExternalName(cr); got != lisID {
		t.Errorf("external name = %q, want the listener id %s", got, lisID)
	}
	waitTargets(t, lbID, lisID, "", map[string]int{"10.0.0.1:9000": 10, "10.0.0.2:9000": 20, "10.0.0.3:9000": 0})
	if n := len(cr.Status.AtProvider.Targets); n != 3 {
		t.Errorf("atProvider.targets has %d entries, want 3: %+v", n, cr.Status.AtProvider.Targets)
	}

	// A spec change reaches the cloud: one target replaced by another.
	cr.Spec.ForProvider.Targets = []v1alpha1.Target{
		eniTarget("10.0.0.1", 9000), eniTarget("10.0.0.2", 9000, 20), eniTarget("10.0.0.4", 9000, 30),
	}
	if err := kube.Update(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitTargets(t, lbID, lisID, "", map[string]int{"10.0.0.1:9000": 10, "10.0.0.2:9000": 20, "10.0.0.4:9000": 30})

	// Changes in the cloud are corrected: an extra target and a new weight.
	sdkRegister(t, lbID, lisID, 10, "10.0.0.99")
	w := clbsdk.NewBatchModifyTargetWeightRequest()
	w.LoadBalancerId = &lbID
	w.ModifyList = []*clbsdk.RsWeightRule{{ListenerId: &lisID, Weight: clb.Ptr(int64(77)),
		Targets: []*clbsdk.Target{{EniIp: clb.Ptr("10.0.0.1"), Port: clb.Ptr(int64(9000))}}}}
	eventually(t, "re-weight a target behind the provider's back", func() error {
		_, err := sdk(t).BatchModifyTargetWeight(w)
		return err
	})
	waitTargets(t, lbID, lisID, "", map[string]int{"10.0.0.1:9000": 10, "10.0.0.2:9000": 20, "10.0.0.4:9000": 30})
	waitReady(t, cr)

	// Deleting the resource removes every target of the listener.
	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
	waitTargets(t, lbID, lisID, "", map[string]int{})
}

// TestTargetSetChangesOnlyWhatChanged changes the weight of one target of
// three: the cloud must see one weight change and no target removed or
// added again.
func TestTargetSetChangesOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "UDP", 9000)
	cr := newTargetSet(ns, "weights", lbID, lisID, []v1alpha1.Target{
		eniTarget("10.0.0.1", 9000), eniTarget("10.0.0.2", 9000), eniTarget("10.0.0.3", 9000),
	})
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	waitTargets(t, lbID, lisID, "", map[string]int{"10.0.0.1:9000": 10, "10.0.0.2:9000": 10, "10.0.0.3:9000": 10})

	reg, dereg, weight := callsOf("BatchRegisterTargets"), callsOf("BatchDeregisterTargets"), callsOf("BatchModifyTargetWeight")
	cr.Spec.ForProvider.Targets[1].Weight = clb.Ptr(int64(70))
	if err := kube.Update(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitTargets(t, lbID, lisID, "", map[string]int{"10.0.0.1:9000": 10, "10.0.0.2:9000": 70, "10.0.0.3:9000": 10})
	waitReady(t, cr)
	time.Sleep(time.Second) // let a follow-up reconcile run
	if n := callsOf("BatchRegisterTargets") - reg; n != 0 {
		t.Errorf("a weight change sent %d BatchRegisterTargets calls, want 0", n)
	}
	if n := callsOf("BatchDeregisterTargets") - dereg; n != 0 {
		t.Errorf("a weight change sent %d BatchDeregisterTargets calls, want 0", n)
	}
	if n := callsOf("BatchModifyTargetWeight") - weight; n != 1 {
		t.Errorf("a weight change sent %d BatchModifyTargetWeight calls, want 1", n)
	}

	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
}

// TestTargetSetHundredTargets registers 100 targets at once: the client
// sends them in a few BatchRegisterTargets calls, not one per target.
func TestTargetSetHundredTargets(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "TCP", 9100)
	var targets []v1alpha1.Target
	want := map[string]int{}
	for i := range 100 {
		ip := fmt.Sprintf("10.2.%d.%d", i/50, 1+i%50)
		targets = append(targets, eniTarget(ip, 9100))
		want[ip+":9100"] = 10
	}
	reg := callsOf("BatchRegisterTargets")
	start := time.Now()
	cr := newTargetSet(ns, "hundred", lbID, lisID, targets)
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	t.Logf("100 targets Ready in %s", time.Since(start).Round(time.Millisecond))
	waitTargets(t, lbID, lisID, "", want)
	if n := callsOf("BatchRegisterTargets") - reg; n < 1 || n > 3 {
		t.Errorf("100 targets took %d BatchRegisterTargets calls, want 1 to 3", n)
	}
	if n := len(cr.Status.AtProvider.Targets); n != 100 {
		t.Errorf("atProvider.targets has %d entries, want 100", n)
	}

	dereg := callsOf("BatchDeregisterTargets")
	start = time.Now()
	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
	waitTargets(t, lbID, lisID, "", map[string]int{})
	t.Logf("100 targets removed in %s", time.Since(start).Round(time.Millisecond))
	if n := callsOf("BatchDeregisterTargets") - dereg; n > 3 {
		t.Errorf("removing 100 targets took %d BatchDeregisterTargets calls, want at most 3", n)
	}
}

func TestTargetSetOrphan(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "TCP", 9000)
	cr := newTargetSet(ns, "kept", lbID, lisID, []v1alpha1.Target{eniTarget("10.0.0.1", 9000)}, func(ts *v1alpha1.TargetSet) {
		ts.Spec.ManagementPolicies = orphanPolicies()
	})
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
	if got, _ := inventoryTargets(lbID, lisID, ""); !maps.Equal(got, map[string]int{"10.0.0.1:9000": 10}) {
		t.Errorf("orphaned targets = %v, want them kept", got)
	}
}

func TestTargetSetObserveOnlyImport(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "TCP", 9000)
	sdkRegister(t, lbID, lisID, 40, "10.0.0.7", "10.0.0.8")
	waitIdle(t, lbID)
	before := writeCalls()

	// Only the load balancer and the external name: the listener comes
	// from the name, and the empty target list is not a wish to remove.
	cr := newTargetSet(ns, "imported", lbID, "", nil, func(ts *v1alpha1.TargetSet) {
		meta.SetExternalName(ts, lisID)
		ts.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
	})
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	// The emulator reports targets it does not probe as healthy.
	want := []v1alpha1.TargetObservation{{IP: "10.0.0.7", Port: 9000, Weight: 40, Health: "Healthy"}, {IP: "10.0.0.8", Port: 9000, Weight: 40, Health: "Healthy"}}
	if got := cr.Status.AtProvider.Targets; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("atProvider.targets = %+v, want %+v", got, want)
	}
	if cr.Spec.ForProvider.ListenerID != nil || len(cr.Spec.ForProvider.Targets) != 0 {
		t.Errorf("Observe-only import changed the spec: %+v", cr.Spec.ForProvider)
	}
	time.Sleep(2 * time.Second) // a few more reconciles
	if after := writeCalls(); after != before {
		t.Errorf("Observe-only import wrote to the cloud: %d write calls before, %d after (%v)", before, after, cloud.Calls())
	}
	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
	if got, _ := inventoryTargets(lbID, lisID, ""); len(got) != 2 {
		t.Errorf("deleting an Observe-only TargetSet removed targets: %v", got)
	}
}

// TestTargetSetOfRule sets the targets of an L7 rule found by reference.
func TestTargetSetOfRule(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "HTTP", 80)
	r := newRule(ns, "api", lbID, lisID, func(r *v1alpha1.Rule) { r.Spec.ForProvider.URL = "/api" })
	if err := kube.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	cr := newTargetSet(ns, "api-backends", lbID, lisID, []v1alpha1.Target{eniTarget("10.0.0.1", 8080), eniTarget("10.0.0.2", 8080, 5)},
		func(ts *v1alpha1.TargetSet) { ts.Spec.ForProvider.RuleIDRef = &xpv2.NamespacedReference{Name: "api"} })
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, r)
	waitReady(t, cr)
	ruleID := meta.GetExternalName(r)
	if got, want := meta.GetExternalName(cr), lisID+"/"+ruleID; got != want {
		t.Errorf("external name = %q, want %q", got, want)
	}
	waitTargets(t, lbID, lisID, ruleID, map[string]int{"10.0.0.1:8080": 10, "10.0.0.2:8080": 5})

	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
	waitTargets(t, lbID, lisID, ruleID, map[string]int{})
	if err := kube.Delete(ctx, r); err != nil {
		t.Fatal(err)
	}
	waitGone(t, r)
}

// TestTargetSetMissingListener names a listener that does not exist.
func TestTargetSetMissingListener(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lbID := fixtureLB(t)
	cr := newTargetSet(ns, "nowhere", lbID, "lbl-missing0", []v1alpha1.Target{eniTarget("10.0.0.1", 9000)})
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	want := "listener lbl-missing0 of load balancer " + lbID + " does not exist"
	waitFor(t, cr, func() error {
		c := cr.GetCondition(xpv2.TypeSynced)
		if c.Status != "False" || !strings.Contains(c.Message, want) {
			return errors.Errorf("Synced=%s %q", c.Status, c.Message)
		}
		return nil
	})
	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
}

// TestTargetSetExample applies examples/clb/targetset.yaml, waits for all
// of it to be Ready, and deletes it without leaving anything in the cloud.
func TestTargetSetExample(t *testing.T) {
	objs, names := applyExampleReady(t, "clb/targetset.yaml")
	lbID, lisID := names[0], names[1]
	waitTargets(t, lbID, lisID, "", map[string]int{"10.0.1.10:9000": 10, "10.0.1.11:9000": 50})
	deleteExample(t, objs, names)
}
