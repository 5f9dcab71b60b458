package loadbalancer

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
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

// TestUsersOfOtherNamespaces: a Listener or PortPool of another namespace
// holds up the deletion of an untagged load balancer, which it may use,
// but not of one whose owner tags name the LoadBalancer's namespace, which
// it may not: a tenant cannot keep another team's load balancer alive by
// naming it.
func TestUsersOfOtherNamespaces(t *testing.T) {
	kube := &test.MockClient{MockList: func(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
		switch l := list.(type) {
		case *v1alpha1.ListenerList:
			for _, ns := range []string{"team-a", "team-b"} {
				li := v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "l"}}
				li.Spec.ForProvider.LoadBalancerID = clb.Ptr("lb-1")
				l.Items = append(l.Items, li)
			}
		case *v1alpha1.PortPoolList:
			p := v1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "p"}}
			p.Spec.ForProvider.LoadBalancerIDs = []string{"lb-1"}
			l.Items = append(l.Items, p)
		}
		return nil
	}}
	cases := map[string]struct {
		tags map[string]string
		want []string
	}{
		"Untagged": {want: []string{"Listener team-a/l", "Listener team-b/l", "PortPool team-b/p"}},
		"Own":      {tags: map[string]string{mr.TagNamespace: "team-a"}, want: []string{"Listener team-a/l"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr := lbOf(withExternalName("lb-1"))
			cr.Status.AtProvider.Tags = tc.tags
			got, err := (&external{kube: kube}).users(context.Background(), cr)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("users: -want +got:\n%s", diff)
			}
		})
	}
}
