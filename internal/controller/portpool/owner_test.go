package portpool

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb/fake"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// TestOwnership: a PortPool puts listeners only on load balancers whose
// owner tags name its namespace, whose LoadBalancer lets its namespace in
// (within the bound), or that carry none and are granted (or its own
// account's); one of another namespace is NotOwned (no bindings) and named in the error
// (Synced=False), nothing is written to it, and a deleted pool lets go of
// it without a write.
func TestOwnership(t *testing.T) {
	inNamespace := func(p *v1alpha1.PortPool) { p.SetNamespace("team-a") }
	deleted := func(p *v1alpha1.PortPool) {
		now := metav1.Now()
		p.SetDeletionTimestamp(&now)
	}
	// pools is lb-a tagged tags and untagged lb-b, each holding the pool's
	// listener on port 100 when held is set.
	pools := func(tags map[string]string, held bool) *fake.Cloud {
		c := fake.New()
		c.AddLB("lb-a", tags)
		c.AddLB("lb-b", nil)
		if held {
			for _, id := range []string{"lb-a", "lb-b"} {
				c.Listeners[id] = []*clbsdk.Listener{{ListenerId: clb.Ptr("lbl-" + id), ListenerName: clb.Ptr(newNamer("team-a", "p").listenerName(100)),
					Protocol: clb.Ptr("TCP"), Port: clb.Ptr(int64(100)), EndPort: clb.Ptr(int64(0))}}
			}
		}
		return c
	}
	cases := map[string]struct {
		reason string
		home   *fake.Cloud
		objs   []client.Object
		cr     *v1alpha1.PortPool
		err    string
		writes []string
		states []string // of status.atProvider.loadBalancers, when set
	}{
		"Other": {
			reason: "No listener is put on another namespace's load balancer; the pool's others are served, and the refusal is the error.",
			home:   pools(map[string]string{mr.TagNamespace: "team-b"}, false),
			cr:     pool(inNamespace, onLBs("lb-a", "lb-b")),
			err:    "load balancer lb-a belongs to namespace team-b, not team-a: " + mr.OwnerRule,
			writes: []string{"CreateListener lb-b TCP 100..104 end=0"},
			states: []string{v1alpha1.PoolLBNotOwned, v1alpha1.PoolLBCreating},
		},
		"OtherPools": {
			reason: "A load balancer another namespace's PortPool created is refused too.",
			home:   pools(map[string]string{mr.TagPool: "team-b/games", mr.TagPoolUID: "uid-b"}, false),
			cr:     pool(inNamespace, onLBs("lb-a")),
			err:    "belongs to namespace team-b",
			states: []string{v1alpha1.PoolLBNotOwned},
		},
		"OtherWhileDeleting": {
			reason: "A deleted pool deletes its listeners from its own and untagged load balancers only.",
			home:   pools(map[string]string{mr.TagNamespace: "team-b"}, true),
			cr:     pool(inNamespace, onLBs("lb-a", "lb-b"), deleted),
			writes: []string{"DeleteListeners lb-b 1"},
		},
		"Shared": {
			reason: "A load balancer whose LoadBalancer lets the pool's namespace in takes the pool's listeners, within the bound.",
			home:   pools(edgeTags, false),
			objs:   []client.Object{edge(5)},
			cr:     pool(inNamespace, onLBs("lb-a", "lb-b")),
			writes: []string{"CreateListener lb-a TCP 100..104 end=0", "CreateListener lb-b TCP 100..104 end=0"},
		},
		"SharedOverBound": {
			reason: "A shared load balancer on which the pool would hold more listeners than its namespace's bound is NotOwned; the others are served.",
			home:   pools(edgeTags, false),
			objs:   []client.Object{edge(4)},
			cr:     pool(inNamespace, onLBs("lb-a", "lb-b")),
			err:    "the pool puts 5 listeners on load balancer lb-a of namespace team-b, over namespace team-a's bound there (4,",
			writes: []string{"CreateListener lb-b TCP 100..104 end=0"},
			states: []string{v1alpha1.PoolLBNotOwned, v1alpha1.PoolLBCreating},
		},
		"UntaggedNotGranted": {
			reason: "An untagged load balancer no grant gives the namespace stops the whole pool: nothing is written, no binding moves, until the platform team grants it.",
			home:   pools(map[string]string{mr.TagNamespace: "team-a"}, false),
			objs:   []client.Object{ungranting()},
			cr:     pool(inNamespace, onLBs("lb-a", "lb-b"), viaCluster),
			err:    "load balancer lb-b carries no owner tags (made in the console or by another tool): no grant of ClusterProviderConfig default gives it to namespace team-a",
		},
		"GameServerSetPool": {
			reason: "A pool the provider made in tke-port-pools for a GameServerSet builds only where the GameServerSet's namespace may: its ClbIds are that namespace's users' choice.",
			home:   pools(map[string]string{mr.TagNamespace: "team-b"}, false),
			cr:     pool(inTKEPools("team-a"), onLBs("lb-a", "lb-b")),
			err:    "load balancer lb-a belongs to namespace team-b, not team-a",
			writes: []string{"CreateListener lb-b TCP 100..104 end=0"},
			states: []string{v1alpha1.PoolLBNotOwned, v1alpha1.PoolLBCreating},
		},
		"AdminTKEPool": {
			reason: "An admin's CLBPortPool's pool in tke-port-pools builds on the load balancers the admin chose.",
			home:   pools(map[string]string{mr.TagNamespace: "team-b"}, false),
			cr:     pool(inTKEPools(""), onLBs("lb-a", "lb-b")),
			writes: []string{"CreateListener lb-a TCP 100..104 end=0", "CreateListener lb-b TCP 100..104 end=0"},
		},
		"Own": {
			reason: "Listeners are put on its own namespace's and untagged load balancers.",
			home:   pools(map[string]string{mr.TagNamespace: "team-a"}, false),
			cr:     pool(inNamespace, onLBs("lb-a", "lb-b")),
			writes: []string{"CreateListener lb-a TCP 100..104 end=0", "CreateListener lb-b TCP 100..104 end=0"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newExternal(t, tc.home, nil, tc.objs...)
			meta.SetExternalName(tc.cr, "p")
			var err error
			if meta.WasDeleted(tc.cr) {
				var exists bool
				if exists, err = observeExists(e, tc.cr); err == nil && exists {
					_, err = e.Delete(context.Background(), tc.cr)
				}
			} else {
				err = reconcile(t, *e, tc.cr)
			}
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("%s\nreconcile: %v, want error containing %q", tc.reason, err, tc.err)
			}
			if diff := cmp.Diff(tc.writes, tc.home.Log()); diff != "" {
				t.Errorf("%s\ncloud writes: -want +got:\n%s", tc.reason, diff)
			}
			if tc.states != nil {
				var got []string
				for _, lb := range tc.cr.Status.AtProvider.LoadBalancers {
					got = append(got, lb.State)
				}
				if diff := cmp.Diff(tc.states, got); diff != "" {
					t.Errorf("%s\nload balancer states: -want +got:\n%s", tc.reason, diff)
				}
			}
		})
	}
}

func observeExists(e *external, cr *v1alpha1.PortPool) (bool, error) {
	obs, err := e.Observe(context.Background(), cr)
	return obs.ResourceExists, err
}

// TestTemplateReservedTags: a template whose tags hold the provider's own
// keys (a pool older than the admission rule) is refused before any cloud
// call.
func TestTemplateReservedTags(t *testing.T) {
	home := fake.New()
	cr := pool(func(p *v1alpha1.PortPool) {
		p.Spec.ForProvider.AutoCreate = &v1alpha1.PoolAutoCreate{MaxLoadBalancers: 1, Template: v1alpha1.LoadBalancerParameters{
			Tags: map[string]string{mr.TagNamespace: "team-b"},
		}}
	})
	err := reconcile(t, *newExternal(t, home, nil), cr)
	want := "spec.forProvider.autoCreate.template.tags: " + mr.ReservedTagsRule + " (crossplane-namespace)"
	if err == nil || err.Error() != want {
		t.Errorf("reconcile: %v, want %q", err, want)
	}
	if home.QuotaCalls > 0 || len(home.Log()) > 0 {
		t.Errorf("cloud calls: %d quota reads, writes %v; want none", home.QuotaCalls, home.Log())
	}
}

// edgeTags are the owner tags of LoadBalancer team-b/edge's load balancer.
var edgeTags = map[string]string{mr.TagNamespace: "team-b", mr.TagKind: v1alpha1.LoadBalancerKind, mr.TagName: "edge", mr.TagUID: "uid-edge"}

// edge is LoadBalancer team-b/edge, letting every namespace in with bound
// listeners each.
func edge(bound int64) *v1alpha1.LoadBalancer {
	lb := &v1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "edge", UID: "uid-edge"}}
	lb.Spec.Consumers = &v1alpha1.LoadBalancerConsumers{Namespaces: v1alpha1.NamespaceConsent{From: v1alpha1.ConsentAll}, MaxListenersPerNamespace: &bound}
	return lb
}

// ungranting is ClusterProviderConfig default serving every namespace,
// without grants.
func ungranting() *clusterv1alpha1.ClusterProviderConfig {
	c := &clusterv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	c.Spec.Consumers = &clusterv1alpha1.ConfigConsumers{Namespaces: v1alpha1.NamespaceConsent{From: v1alpha1.ConsentAll}}
	return c
}

// viaCluster has the pool use ClusterProviderConfig default.
func viaCluster(p *v1alpha1.PortPool) {
	p.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: clusterv1alpha1.ClusterProviderConfigKind, Name: "default"})
}

// inTKEPools puts the pool in tke-port-pools, acting for namespace ns when
// set (a GameServerSet's pool).
func inTKEPools(ns string) func(*v1alpha1.PortPool) {
	return func(p *v1alpha1.PortPool) {
		p.SetNamespace(podannotation.TKEPoolNamespace)
		if ns != "" {
			meta.AddAnnotations(p, map[string]string{v1alpha1.AnnotationActsFor: ns})
		}
	}
}
