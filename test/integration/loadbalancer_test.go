package integration

import (
	"context"
	"testing"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/loadbalancer"
)

func newLB(ns, name string, mods ...func(*v1alpha1.LoadBalancer)) *v1alpha1.LoadBalancer {
	lb := &v1alpha1.LoadBalancer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.LoadBalancerSpec{ForProvider: v1alpha1.LoadBalancerParameters{
			Type:   clb.Ptr("OPEN"),
			VipIsp: clb.Ptr("BGP"),
			Tags:   map[string]string{"team": "games"},
		}},
	}
	for _, m := range mods {
		m(lb)
	}
	return lb
}

// cloudName is the name of a load balancer in the emulator.
func cloudName(id string) string {
	lb, _ := inventoryLB(id)
	return lb.Name
}

func TestLoadBalancerLifecycle(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cr := newLB(ns, "web", func(lb *v1alpha1.LoadBalancer) { lb.Spec.ForProvider.Name = clb.Ptr("web-1") })
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	id := meta.GetExternalName(cr)
	got, ok := inventoryLB(id)
	if !ok {
		t.Fatalf("load balancer %q is not in the cloud", id)
	}
	if got.Name != "web-1" || got.Tags["team"] != "games" || got.Tags[loadbalancer.TagUID] != string(cr.GetUID()) {
		t.Errorf("cloud load balancer = %+v, want name web-1 with the user's and the UID tag", got)
	}
	if len(cr.Status.AtProvider.VIPs) == 0 || cr.Status.AtProvider.VIPs[0] != got.VIP || cr.Status.AtProvider.Status != "Normal" {
		t.Errorf("atProvider = %+v, want the VIP %s and status Normal", cr.Status.AtProvider, got.VIP)
	}
	// Late initialization filled what the spec left unset, and nothing else.
	if cr.Spec.ForProvider.VpcID == nil || cr.Spec.ForProvider.AddressIPVersion == nil {
		t.Errorf("late-init left vpcId/addressIPVersion unset: %+v", cr.Spec.ForProvider)
	}

	// A spec change reaches the cloud.
	cr.Spec.ForProvider.Name = clb.Ptr("web-2")
	if err := kube.Update(ctx, cr); err != nil {
		t.Fatal(err)
	}
	eventually(t, "rename to web-2", func() error {
		if n := cloudName(id); n != "web-2" {
			return errors.Errorf("cloud name %q", n)
		}
		return nil
	})

	// A change in the cloud is corrected.
	req := clbsdk.NewModifyLoadBalancerAttributesRequest()
	req.LoadBalancerId, req.LoadBalancerName = &id, clb.Ptr("changed-by-hand")
	eventually(t, "change the name behind the provider's back", func() error {
		_, err := sdk(t).ModifyLoadBalancerAttributes(req)
		return err
	})
	eventually(t, "drift corrected", func() error {
		if n := cloudName(id); n != "web-2" {
			return errors.Errorf("cloud name %q", n)
		}
		return nil
	})

	// Deleting the resource deletes the load balancer.
	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
	if _, ok := inventoryLB(id); ok {
		t.Errorf("load balancer %s still in the cloud after delete", id)
	}
}

func TestLoadBalancerOrphan(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cr := newLB(ns, "kept", func(lb *v1alpha1.LoadBalancer) {
		lb.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionCreate, xpv2.ManagementActionUpdate, xpv2.ManagementActionLateInitialize}
	})
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	id := meta.GetExternalName(cr)
	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
	if _, ok := inventoryLB(id); !ok {
		t.Errorf("orphaned load balancer %s was deleted from the cloud", id)
	}
}

func TestLoadBalancerObserveOnlyImport(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	req := clbsdk.NewCreateLoadBalancerRequest()
	req.LoadBalancerType, req.LoadBalancerName = clb.Ptr("OPEN"), clb.Ptr("made-elsewhere")
	var id string
	eventually(t, "create a load balancer outside the provider", func() error {
		resp, err := sdk(t).CreateLoadBalancer(req)
		if err != nil {
			return err
		}
		id = *resp.Response.LoadBalancerIds[0]
		return nil
	})
	eventually(t, "the load balancer becomes normal", func() error {
		if lb, _ := inventoryLB(id); lb.Status != 1 {
			return errors.New("still creating")
		}
		return nil
	})
	before := writeCalls()

	cr := &v1alpha1.LoadBalancer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "imported", Annotations: map[string]string{meta.AnnotationKeyExternalName: id}},
		Spec: v1alpha1.LoadBalancerSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{ManagementPolicies: xpv2.ManagementPolicies{xpv2.ManagementActionObserve}},
		},
	}
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	if cr.Status.AtProvider.ID != id || cr.Status.AtProvider.Name != "made-elsewhere" || len(cr.Status.AtProvider.VIPs) == 0 {
		t.Errorf("atProvider = %+v, want the imported load balancer", cr.Status.AtProvider)
	}
	if cr.Spec.ForProvider.Name != nil {
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
	if _, ok := inventoryLB(id); !ok {
		t.Error("deleting an Observe-only resource deleted the load balancer")
	}
}

// TestLoadBalancerAdoptsUnsavedCreate leaves the state a provider killed
// between CreateLoadBalancer and saving the external name leaves behind:
// a load balancer created with the resource's ClientToken and UID tag, and
// a resource with a pending create but no external name. The provider must
// adopt that load balancer, not create a second one or stop.
func TestLoadBalancerAdoptsUnsavedCreate(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cr := newLB(ns, "crashed", func(lb *v1alpha1.LoadBalancer) {
		lb.SetAnnotations(map[string]string{
			meta.AnnotationKeyExternalCreatePending: time.Now().Format(time.RFC3339),
			meta.AnnotationKeyReconciliationPaused:  "true",
		})
	})
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	// What the killed provider had sent, with the same UID.
	req := loadbalancer.CreateRequest(cr)
	var id string
	eventually(t, "the create the killed provider sent", func() error {
		resp, err := sdk(t).CreateLoadBalancer(req)
		if err != nil {
			return err
		}
		id = *resp.Response.LoadBalancerIds[0]
		return nil
	})

	// The restarted provider takes over.
	eventually(t, "unpause", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		meta.RemoveAnnotations(cr, meta.AnnotationKeyReconciliationPaused)
		return kube.Update(ctx, cr)
	})
	waitReady(t, cr)
	if got := meta.GetExternalName(cr); got != id {
		t.Errorf("external name = %q, want the load balancer created before the crash, %q", got, id)
	}
	n := 0
	for _, lb := range cloud.Inventory().LoadBalancers {
		if lb.Tags[loadbalancer.TagUID] == string(cr.GetUID()) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d load balancers carry the resource's UID, want exactly 1", n)
	}
}
