package portpool

import (
	"testing"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

// TestMoving: a pool is not Ready while bindings leave a load balancer that
// left it (or drains), or its listeners there are being deleted.
func TestMoving(t *testing.T) {
	lb := func(id, state string, allocated int64) v1alpha1.PoolLoadBalancerStatus {
		return v1alpha1.PoolLoadBalancerStatus{ID: id, State: state, Allocated: allocated}
	}
	for name, tc := range map[string]struct {
		lbs  []v1alpha1.PoolLoadBalancerStatus
		want string
	}{
		"all ready":           {[]v1alpha1.PoolLoadBalancerStatus{lb("a", v1alpha1.PoolLBReady, 3)}, ""},
		"removed with some":   {[]v1alpha1.PoolLoadBalancerStatus{lb("a", v1alpha1.PoolLBReady, 0), lb("b", v1alpha1.PoolLBRemoved, 2)}, "load balancer b (Removed): 2 bindings moving"},
		"draining with some":  {[]v1alpha1.PoolLoadBalancerStatus{lb("c", v1alpha1.PoolLBDraining, 1)}, "load balancer c (Draining): 1 bindings moving"},
		"draining and empty":  {[]v1alpha1.PoolLoadBalancerStatus{lb("c", v1alpha1.PoolLBDraining, 0)}, ""},
		"removed, listeners":  {[]v1alpha1.PoolLoadBalancerStatus{lb("d", v1alpha1.PoolLBRemoved, 0)}, "load balancer d left the pool: deleting its listeners"},
		"blacklisted is kept": {[]v1alpha1.PoolLoadBalancerStatus{lb("e", v1alpha1.PoolLBBlacklisted, 4)}, ""},
	} {
		if got := moving(v1alpha1.PortPoolObservation{LoadBalancers: tc.lbs}); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}
