package portpool

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb/fake"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// TestOwnership: a PortPool puts listeners only on load balancers whose
// owner tags name its namespace, or that carry none; one of another
// namespace is NotOwned (no bindings) and named in the error
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
		"Own": {
			reason: "Listeners are put on its own namespace's and untagged load balancers.",
			home:   pools(map[string]string{mr.TagNamespace: "team-a"}, false),
			cr:     pool(inNamespace, onLBs("lb-a", "lb-b")),
			writes: []string{"CreateListener lb-a TCP 100..104 end=0", "CreateListener lb-b TCP 100..104 end=0"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newExternal(t, tc.home, nil)
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
