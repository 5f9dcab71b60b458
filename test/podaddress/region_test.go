package podaddress

import (
	"context"
	"fmt"
	"slices"
	"testing"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

// lbIn creates an OPEN load balancer in region straight through the SDK (a
// load balancer the provider config's region does not hold) and waits
// until it is up.
func lbIn(t *testing.T, region, name string) string {
	t.Helper()
	sdk := emulatortest.ConsoleClient(t, cloud.Endpoint(), region)
	req := clbsdk.NewCreateLoadBalancerRequest()
	req.LoadBalancerType, req.LoadBalancerName = clb.Ptr("OPEN"), clb.Ptr(name)
	var id string
	eventually(t, "a load balancer in "+region, func() error {
		resp, err := sdk.CreateLoadBalancer(req)
		if err != nil {
			return err
		}
		id = *resp.Response.LoadBalancerIds[0]
		return nil
	})
	eventually(t, "load balancer "+id+" up", func() error {
		if lb, ok := cloud.Inventory().LoadBalancer(id); !ok || lb.Status != 1 || lb.Region != region {
			return errors.Errorf("%+v", lb)
		}
		return nil
	})
	return id
}

// TestCrossRegionPool binds Pods on a pool over a load balancer of the
// provider config's region and one of another region (region:lb-…): each
// Pod is registered on the load balancer it was given, in that load
// balancer's region, and deleting the Pods leaves no target in either.
func TestCrossRegionPool(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	const far = "ap-chengdu"
	home := lbID(lb(t, ns, "home", "BGP"))
	away := lbIn(t, far, "far-"+ns)
	pool(t, ns, "pool", nil, 43000, 43001, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.ForProvider.LoadBalancerIDs = []string{home, far + ":" + away}
	})

	// Four Pods fill the two slots of each load balancer.
	var pods []*v1alpha1.PodAddress
	var kpods []*corev1.Pod
	for i := range 4 {
		name := fmt.Sprintf("p-%d", i)
		kpods = append(kpods, pod(t, ns, name, fmt.Sprintf("10.43.0.%d", i+1), map[string]string{bcsEnabled: "true", bcsPorts: "pool TCP 7777"}))
		pods = append(pods, bound(t, ns, name))
	}
	perLB := map[string]int{}
	for i, pa := range pods {
		b := pa.Status.Bindings[0]
		perLB[b.LoadBalancerID]++
		wantRegion := emulator.DefaultRegion
		if b.LoadBalancerID == away {
			wantRegion = far
		}
		if b.Region != wantRegion {
			t.Errorf("%s: binding on %s records region %q, want %q", pa.Name, b.LoadBalancerID, b.Region, wantRegion)
		}
		lb, _ := cloud.Inventory().LoadBalancer(b.LoadBalancerID)
		if lb.Region != wantRegion {
			t.Errorf("%s: load balancer %s is in %s, want %s", pa.Name, b.LoadBalancerID, lb.Region, wantRegion)
		}
		want := fmt.Sprintf("10.43.0.%d:7777", i+1)
		if got := cloudTargets(b.LoadBalancerID, b.ListenerIDs["TCP"]); !slices.Equal(got, []string{want}) {
			t.Errorf("%s: targets of %s/%s are %v, want [%s]", pa.Name, b.LoadBalancerID, b.ListenerIDs["TCP"], got, want)
		}
	}
	if perLB[home] != 2 || perLB[away] != 2 {
		t.Fatalf("bindings per load balancer %v; want 2 on %s and 2 on %s", perLB, home, away)
	}

	for _, p := range kpods {
		deletePod(t, p)
	}
	for _, pa := range pods {
		eventually(t, "PodAddress "+pa.Name+" gone", func() error {
			err := kube.Get(context.Background(), client.ObjectKeyFromObject(pa), &v1alpha1.PodAddress{})
			if kerrors.IsNotFound(err) {
				return nil
			}
			return errors.Errorf("still there (%v)", err)
		})
	}
	for _, id := range []string{home, away} {
		lb, _ := cloud.Inventory().LoadBalancer(id)
		for _, l := range lb.Listeners {
			if len(l.Targets) != 0 {
				t.Errorf("load balancer %s (%s) listener %s keeps targets %+v", id, lb.Region, l.ID, l.Targets)
			}
		}
	}
}
