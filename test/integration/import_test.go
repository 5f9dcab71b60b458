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
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/clbconv"
)

// sdkLB creates a load balancer named name outside the provider and waits
// until it is up.
func sdkLB(t *testing.T, name string) string {
	t.Helper()
	req := clbsdk.NewCreateLoadBalancerRequest()
	req.LoadBalancerType, req.LoadBalancerName = clbconv.Ptr("OPEN"), clbconv.Ptr(name)
	var id string
	eventually(t, "create load balancer "+name, func() error {
		resp, err := sdk(t).CreateLoadBalancer(req)
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
			ForProvider:         v1alpha1.LoadBalancerParameters{Name: clbconv.Ptr(cloudName)},
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
