package integration

import (
	"context"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// TestManagedResourcesOtherRegion builds a load balancer, a listener and
// its targets in another region than the provider config's (ap-guangzhou)
// by setting forProvider.region on each, with references between them.
func TestManagedResourcesOtherRegion(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	const region = "ap-shanghai"
	inRegion := clb.Ptr(region)

	lb := newLB(ns, "far", func(lb *v1alpha1.LoadBalancer) { lb.Spec.ForProvider.Region = inRegion })
	if err := kube.Create(ctx, lb); err != nil {
		t.Fatal(err)
	}
	l := newListener(ns, "far", "far", 7100, func(l *v1alpha1.Listener) { l.Spec.ForProvider.Region = inRegion })
	if err := kube.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	ts := newTargetSet(ns, "far", "", "", []v1alpha1.Target{eniTarget("10.3.0.1", 7100), eniTarget("10.3.0.2", 7100, 30)},
		func(ts *v1alpha1.TargetSet) {
			ts.Spec.ForProvider.LoadBalancerID = nil
			ts.Spec.ForProvider.LoadBalancerIDRef = &xpv2.NamespacedReference{Name: "far"}
			ts.Spec.ForProvider.ListenerIDRef = &xpv2.NamespacedReference{Name: "far"}
			ts.Spec.ForProvider.Region = inRegion
		})
	if err := kube.Create(ctx, ts); err != nil {
		t.Fatal(err)
	}
	waitReady(t, lb)
	waitReady(t, l)
	waitReady(t, ts)

	id := meta.GetExternalName(lb)
	got, ok := inventoryLB(id)
	if !ok || got.Region != region {
		t.Fatalf("load balancer %s in the cloud: %+v, want it in %s", id, got, region)
	}
	if got.Region == emulator.DefaultRegion {
		t.Fatalf("the load balancer was created in the provider config's region")
	}
	if _, ok := cloudListener(id, meta.GetExternalName(l)); !ok {
		t.Errorf("listener %s is not on load balancer %s", meta.GetExternalName(l), id)
	}
	waitTargets(t, id, meta.GetExternalName(l), "", map[string]int{"10.3.0.1:7100": 10, "10.3.0.2:7100": 30})

	// The region cannot change: the resources would lose their cloud
	// objects and create new ones elsewhere.
	l.Spec.ForProvider.Region = clb.Ptr("ap-beijing")
	if err := kube.Update(ctx, l); err == nil {
		t.Error("changing a Listener's region was accepted")
	}
	lb.Spec.ForProvider.Region = nil
	if err := kube.Update(ctx, lb); err == nil {
		t.Error("unsetting a LoadBalancer's region was accepted")
	}

	if err := kube.Delete(ctx, ts); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ts)
	if err := kube.Delete(ctx, l); err != nil {
		t.Fatal(err)
	}
	waitGone(t, l)
	if err := kube.Delete(ctx, lb); err != nil {
		t.Fatal(err)
	}
	waitGone(t, lb)
	eventually(t, "the load balancer is deleted in "+region, func() error {
		if _, ok := inventoryLB(id); ok {
			return errors.Errorf("load balancer %s still exists", id)
		}
		return nil
	})
}
