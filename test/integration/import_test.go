package integration

import (
	"context"
	"strings"
	"testing"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

// sdkLB creates a load balancer named name outside the provider and waits
// until it is up.
func sdkLB(t *testing.T, name string) string { return sdkLBIn(t, emulator.DefaultRegion, name) }

// sdkLBIn is sdkLB in region.
func sdkLBIn(t *testing.T, region, name string) string {
	t.Helper()
	req := clbsdk.NewCreateLoadBalancerRequest()
	req.LoadBalancerType, req.LoadBalancerName = clb.Ptr("OPEN"), clb.Ptr(name)
	var id string
	eventually(t, "create load balancer "+name, func() error {
		resp, err := emulatortest.ConsoleClient(t, cloud.Endpoint(), region).CreateLoadBalancer(req)
		if err != nil {
			return err
		}
		id = *resp.Response.LoadBalancerIds[0]
		return nil
	})
	eventually(t, name+" becomes normal", func() error {
		if lb, _ := inventoryLB(id); lb.Status != 1 {
			return errors.New("still creating")
		}
		return nil
	})
	return id
}

// observeByName is an Observe-only LoadBalancer with no external name and
// forProvider.name set.
func observeByName(ns, name, cloudName string) *v1alpha1.LoadBalancer {
	return &v1alpha1.LoadBalancer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.LoadBalancerSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{ManagementPolicies: xpv2.ManagementPolicies{xpv2.ManagementActionObserve}},
			ForProvider:         v1alpha1.LoadBalancerParameters{Name: clb.Ptr(cloudName)},
		},
	}
}

// TestLoadBalancerImportByName imports a load balancer by its name: the
// exact name matches (not the API's substring match), the id is saved as
// the external name, and a name nothing carries fails with a condition
// saying so.
func TestLoadBalancerImportByName(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	prefix := strings.ToLower(ns)
	id := sdkLB(t, prefix+"-by-name")
	sdkLB(t, prefix+"-by-name-2") // also matched by the API's substring search
	writes := writeCalls()

	cr := observeByName(ns, "by-name", prefix+"-by-name")
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	if got := meta.GetExternalName(cr); got != id {
		t.Fatalf("external name %q, want %s", got, id)
	}
	if cr.Status.AtProvider.ID != id || len(cr.Status.AtProvider.VIPs) == 0 {
		t.Errorf("atProvider = %+v, want load balancer %s", cr.Status.AtProvider, id)
	}

	missing := observeByName(ns, "missing", prefix+"-by")
	if err := kube.Create(ctx, missing); err != nil {
		t.Fatal(err)
	}
	waitFor(t, missing, func() error {
		if c := missing.GetCondition(xpv2.TypeSynced); c.Status != "False" || !strings.Contains(c.Message, "no load balancer is named") {
			return errors.Errorf("Synced=%s (%s)", c.Status, c.Message)
		}
		return nil
	})
	if meta.GetExternalName(missing) != "" {
		t.Errorf("a name nothing carries got external name %q", meta.GetExternalName(missing))
	}
	if after := writeCalls(); after != writes {
		t.Errorf("importing by name wrote to the cloud: %d write calls before, %d after", writes, after)
	}

	for _, o := range []client.Object{cr, missing} {
		if err := kube.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
		waitGone(t, o)
	}
	if _, ok := inventoryLB(id); !ok {
		t.Error("deleting the Observe-only resource deleted the load balancer")
	}
}

// TestImportByNameExample applies examples/clb/import-by-name.yaml: the
// load balancer another team made in ap-shanghai is found by its name, a
// listener is added to it in that region, and deleting the example deletes
// the listener but leaves the load balancer.
func TestImportByNameExample(t *testing.T) {
	const region = "ap-shanghai"
	id := sdkLBIn(t, region, "shared-ingress")

	objs, names := applyExampleReady(t, "clb/import-by-name.yaml")
	if names[0] != id {
		t.Fatalf("the example's load balancer has external name %q, want %s", names[0], id)
	}
	lst, ok := cloudListener(id, names[1])
	if !ok || lst.Port != 7300 {
		t.Fatalf("listener %s on %s: %+v, %v; want port 7300", names[1], id, lst, ok)
	}
	// The listener goes with the example; the load balancer stays.
	deleteExample(t, objs[1:], names[1:])
	if err := kube.Delete(context.Background(), objs[0]); err != nil {
		t.Fatal(err)
	}
	waitGone(t, objs[0])
	if lb, ok := inventoryLB(id); !ok || lb.Region != region {
		t.Errorf("deleting the example touched the imported load balancer: %+v, %v", lb, ok)
	}
}

// TestSharedLoadBalancerExample applies examples/clb/shared-loadbalancer.yaml:
// namespace team-games, let in by its label, puts its listener on the load
// balancer of namespace examples through a reference across namespaces;
// the example deletes without leaving anything in the cloud.
func TestSharedLoadBalancerExample(t *testing.T) {
	objs, names := applyExampleReady(t, "clb/shared-loadbalancer.yaml")
	lb, listener := names[0], names[1]
	if lst, ok := cloudListener(lb, listener); !ok || lst.Port != 7400 {
		t.Fatalf("listener %s on %s: %+v, %v; want port 7400", listener, lb, lst, ok)
	}
	// The listener first: the load balancer waits for its users.
	deleteExample(t, objs[2:], names[1:])
	deleteExample(t, objs[1:2], names[:1])
	if err := kube.Delete(context.Background(), objs[0]); err != nil {
		t.Fatal(err)
	}
}
