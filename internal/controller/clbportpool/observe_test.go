package clbportpool

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

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
	if lb.State != v1alpha1.LBStateRunning || lb.Hostname == nil || *lb.Hostname != "lb-1.example" {
		t.Fatalf("load balancer %+v", lb)
	}
}

// TestObserveLoadBalancer: each load balancer's allocated is the
// listeners its bindings use (tke-extend's count), not our slots, and its
// IP version is the cloud's answer, left out while unknown.
func TestObserveLoadBalancer(t *testing.T) {
	cases := map[string]struct {
		reason string
		lb     clbv1alpha1.PoolLoadBalancerStatus
		want   v1alpha1.LoadBalancerStatus
	}{
		"TCPUDPSlots": {
			reason: "three TCP_UDP slots are six listeners",
			lb:     clbv1alpha1.PoolLoadBalancerStatus{ID: "lb-1", State: clbv1alpha1.PoolLBReady, Allocated: 3, AllocatedListeners: 6, AddressIPVersion: "ipv4", VIPs: []string{"1.1.1.1"}},
			want:   v1alpha1.LoadBalancerStatus{LoadbalancerID: "lb-1", State: v1alpha1.LBStateRunning, Allocated: 6, AddressIPVersion: ptr.To("ipv4"), Ips: []string{"1.1.1.1"}},
		},
		"IPv6": {
			reason: "the IP version as the cloud spells it, and the IPv6 address (the PortPool's VIP, from AddressIPv6) in ips",
			lb: clbv1alpha1.PoolLoadBalancerStatus{ID: "lb-1", State: clbv1alpha1.PoolLBReady, Allocated: 1, AllocatedListeners: 1, AddressIPVersion: "ipv6",
				IPv6Mode: "IPv6FullChain", VIPs: []string{"fdc1:b000::1"}},
			want: v1alpha1.LoadBalancerStatus{LoadbalancerID: "lb-1", State: v1alpha1.LBStateRunning, Allocated: 1, AddressIPVersion: ptr.To("ipv6"), Ips: []string{"fdc1:b000::1"}},
		},
		"NotFound": {
			reason: "a load balancer not found has no IP version and no listeners",
			lb:     clbv1alpha1.PoolLoadBalancerStatus{ID: "lb-gone", State: clbv1alpha1.PoolLBNotFound},
			want:   v1alpha1.LoadBalancerStatus{LoadbalancerID: "lb-gone", State: v1alpha1.LBStateNotFound},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pp := &clbv1alpha1.PortPool{}
			pp.Status.AtProvider.LoadBalancers = []clbv1alpha1.PoolLoadBalancerStatus{tc.lb}
			var st v1alpha1.CLBPortPoolStatus
			observe(&st, pp)
			if diff := cmp.Diff([]v1alpha1.LoadBalancerStatus{tc.want}, st.LoadbalancerStatuses); diff != "" {
				t.Errorf("%s: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
