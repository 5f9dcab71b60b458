package integration

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// TestOtherNamespacesLoadBalancer: a team imports another team's load
// balancer by its id to rename it, and puts a listener on it. Both are
// Synced=False with the ownership rule, nothing is written to the cloud,
// and deleting them leaves the load balancer as it was.
func TestOtherNamespacesLoadBalancer(t *testing.T) {
	ctx := context.Background()
	a, b := namespace(t), namespace(t)
	theirs := readyLB(t, a, "web")
	id := meta.GetExternalName(theirs)
	if lb, _ := inventoryLB(id); lb.Tags[mr.TagNamespace] != a || lb.Tags[mr.TagKind] != "LoadBalancer" {
		t.Errorf("tags %v, want the owner's namespace %s and kind", lb.Tags, a)
	}
	name := cloudName(id)
	writes := writeCalls()

	stolen := newLB(b, "stolen", func(lb *v1alpha1.LoadBalancer) {
		meta.SetExternalName(lb, id)
		lb.Spec.ForProvider.Name = clb.Ptr("renamed")
	})
	listener := newListener(b, "on-theirs", "", 7001, func(l *v1alpha1.Listener) {
		l.Spec.ForProvider.LoadBalancerIDRef = nil
		l.Spec.ForProvider.LoadBalancerID = clb.Ptr(id)
	})
	// Importing it is refused by its owner tags; building on it by its
	// LoadBalancer, which lets no other namespace in.
	want := map[client.Object]string{
		stolen:   "load balancer " + id + " belongs to namespace " + a + ", not " + b,
		listener: "load balancer " + id + " belongs to LoadBalancer " + a + "/web, whose spec.consumers.namespaces (from: Same (its own namespace only)) does not let namespace " + b + " in",
	}
	for _, o := range []client.Object{stolen, listener} {
		if err := kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, mg := range []interface {
		client.Object
		GetCondition(xpv2.ConditionType) xpv2.Condition
	}{stolen, listener} {
		waitFor(t, mg, func() error {
			if c := mg.GetCondition(xpv2.TypeSynced); c.Status != "False" || !strings.Contains(c.Message, want[mg]) {
				return errors.Errorf("Synced=%s (%s)", c.Status, c.Message)
			}
			return nil
		})
	}
	if stolen.Status.AtProvider.ID != "" {
		t.Errorf("the other team's load balancer reached the status: %+v", stolen.Status.AtProvider)
	}

	for _, o := range []client.Object{stolen, listener} {
		if err := kube.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
		waitGone(t, o)
	}
	if after := writeCalls(); after != writes {
		t.Errorf("another namespace's resources wrote to the cloud: %d write calls before, %d after", writes, after)
	}
	lb, ok := inventoryLB(id)
	if !ok || lb.Name != name || len(lb.Listeners) > 0 {
		t.Errorf("load balancer %s after the other team's deletions: %+v (found %t), want it unchanged, named %q", id, lb, ok, name)
	}
}
