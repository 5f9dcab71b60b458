package clbportpool

import (
	"testing"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
)

// TestObserve: a Ready PortPool makes an Active CLBPortPool whose quota
// is the listeners kept per load balancer, as tke-extend's status says it.
func TestObserve(t *testing.T) {
	pp := &clbv1alpha1.PortPool{}
	pp.Name = "pool-a"
	pp.Spec.ForProvider.Protocols = []string{"TCP", "UDP"}
	pp.Status.AtProvider.SlotsPerLoadBalancer = 25
	pp.Status.AtProvider.LoadBalancers = []clbv1alpha1.PoolLoadBalancerStatus{{ID: "lb-1", State: clbv1alpha1.PoolLBReady, Allocated: 3, Domain: "lb-1.example"}}
	pp.SetConditions(xpv2.Available(), xpv2.ReconcileSuccess())

	var st v1alpha1.CLBPortPoolStatus
	observe(&st, pp)
	if st.State != v1alpha1.StateActive || st.Quota != 50 {
		t.Fatalf("state %q quota %d, want Active 50", st.State, st.Quota)
	}
	if len(st.LoadbalancerStatuses) != 1 {
		t.Fatalf("load balancers %+v", st.LoadbalancerStatuses)
	}
	lb := st.LoadbalancerStatuses[0]
	if lb.State != v1alpha1.LBStateRunning || lb.Allocated != 3 || lb.Hostname == nil || *lb.Hostname != "lb-1.example" {
		t.Fatalf("load balancer %+v", lb)
	}
}
