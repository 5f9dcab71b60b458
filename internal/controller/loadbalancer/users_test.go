package loadbalancer

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

func TestPoolUses(t *testing.T) {
	pool := func(mod func(*v1alpha1.PortPool)) *v1alpha1.PortPool {
		p := &v1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "pool"}}
		mod(p)
		return p
	}
	cases := map[string]struct {
		p    *v1alpha1.PortPool
		want bool
	}{
		"reference in its namespace": {pool(func(p *v1alpha1.PortPool) {
			p.Spec.ForProvider.LoadBalancerIDRefs = []xpv2.NamespacedReference{{Name: "lb"}}
		}), true},
		"reference to another namespace's": {pool(func(p *v1alpha1.PortPool) {
			p.Spec.ForProvider.LoadBalancerIDRefs = []xpv2.NamespacedReference{{Name: "lb", Namespace: "other"}}
		}), false},
		"id":         {pool(func(p *v1alpha1.PortPool) { p.Spec.ForProvider.LoadBalancerIDs = []string{"lb-1"} }), true},
		"region:id":  {pool(func(p *v1alpha1.PortPool) { p.Spec.ForProvider.LoadBalancerIDs = []string{"ap-beijing:lb-1"} }), true},
		"another id": {pool(func(p *v1alpha1.PortPool) { p.Spec.ForProvider.LoadBalancerIDs = []string{"lb-2"} }), false},
		"on it (status)": {pool(func(p *v1alpha1.PortPool) {
			p.Status.AtProvider.LoadBalancers = []v1alpha1.PoolLoadBalancerStatus{{ID: "lb-1"}}
		}), true},
	}
	for name, tc := range cases {
		if got := poolUses(tc.p, "team", "lb", "lb-1"); got != tc.want {
			t.Errorf("%s: poolUses = %t, want %t", name, got, tc.want)
		}
	}
	if poolUses(pool(func(p *v1alpha1.PortPool) { p.Spec.ForProvider.LoadBalancerIDs = []string{""} }), "team", "lb", "") {
		t.Error("a load balancer without an id is used by a pool listing an empty id")
	}
}

func TestErrInUseNamesAFew(t *testing.T) {
	users := []string{"PortPool a/1", "PortPool a/2", "PortPool a/3", "PortPool a/4", "PortPool a/5", "Listener a/6", "Listener a/7"}
	want := "the load balancer is still used by PortPool a/1, PortPool a/2, PortPool a/3, PortPool a/4, PortPool a/5 and 2 more; it is deleted once they are gone"
	if got := errInUse(users).Error(); got != want {
		t.Errorf("errInUse = %q, want %q", got, want)
	}
}
