package tenancy

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// Cloud objects of another team, tried by the editor of tenant-a: tenant-b's
// load balancer carries tenant-b's owner tags, which the provider checks
// before it imports, changes or builds on anything.
//
//nolint:gochecknoinits // each area registers its cases from its file, as the suite asks
func init() {
	// Building on it: tenant-b's LoadBalancer lets no other namespace in.
	notHers := func() string {
		return "load balancer " + w.LB[NamespaceB] + " belongs to LoadBalancer tenant-b/" + PoolB + ", whose spec.consumers.namespaces (from: Same (its own namespace only)) does not let namespace tenant-a in"
	}
	const notShared = "belongs to LoadBalancer tenant-b/" + PoolB + ", whose spec.consumers.namespaces (from: Same (its own namespace only)) does not let namespace tenant-a in; its owners may let it in there"
	attack(
		Attack{
			Name: "editor-imports-other-lb", Who: EditorA,
			What: "import tenant-b's load balancer by external-name (deleting the import would delete it)",
			Want: "belongs to namespace tenant-b, not tenant-a: " + mr.OwnerRule,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				lb := newLB(NamespaceA, "import-b", nil)
				meta.SetExternalName(lb, w.LB[NamespaceB])
				return managedRefusal(ctx, EditorA, lb, "load balancer "+w.LB[NamespaceB]+" belongs to namespace tenant-b, not tenant-a")
			},
			// Deleting the refused import lets go of it: the snapshot
			// after the cleanup would show a deleted load balancer.
			Cleanup: deleteManaged(EditorA, newLB(NamespaceA, "import-b", nil)),
		},
		Attack{
			Name: "editor-listener-on-other-lb-by-id", Who: EditorA,
			What: "create a Listener on tenant-b's load balancer, named by its id",
			Want: notShared,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				id := w.LB[NamespaceB]
				l := &clbv1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "on-b-by-id"},
					Spec: clbv1alpha1.ListenerSpec{ForProvider: clbv1alpha1.ListenerParameters{Port: 9101, Protocol: "TCP", LoadBalancerID: &id}}}
				return managedRefusal(ctx, EditorA, l, notHers())
			},
			Cleanup: deleteManaged(EditorA, &clbv1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "on-b-by-id"}}),
		},
		Attack{
			Name: "editor-targets-other-listener", Who: EditorA,
			What: "a TargetSet on a listener of tenant-b's pool (it would replace the listener's whole target list)",
			Want: notShared,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				id := w.LB[NamespaceB]
				lis := ""
				for _, lb := range cloud.Inventory().LoadBalancers {
					if lb.ID == id && len(lb.Listeners) > 0 {
						lis = lb.Listeners[0].ID
					}
				}
				ts := &clbv1alpha1.TargetSet{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "on-b-listener"},
					Spec: clbv1alpha1.TargetSetSpec{ForProvider: clbv1alpha1.TargetSetParameters{LoadBalancerID: &id, ListenerID: &lis}}}
				return managedRefusal(ctx, EditorA, ts, notHers())
			},
			Cleanup: deleteManaged(EditorA, &clbv1alpha1.TargetSet{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "on-b-listener"}}),
		},
		Attack{
			Name: "editor-pool-on-other-lb-by-id", Who: EditorA,
			What: "a PortPool of hers over tenant-b's load balancer, named by its id",
			Want: notShared,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				pp := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "on-b-by-id"},
					Spec: clbv1alpha1.PortPoolSpec{ForProvider: clbv1alpha1.PortPoolParameters{StartPort: 31100, EndPort: 31109,
						LoadBalancerIDs: []string{w.LB[NamespaceB]}}}}
				return managedRefusal(ctx, EditorA, pp, notHers())
			},
			Cleanup: deleteManaged(EditorA, &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "on-b-by-id"}}),
		},
		Attack{
			Name: "editor-reserved-tag", Who: EditorA,
			What: "create a LoadBalancer whose tags carry crossplane-uid (the tag by which the provider adopts a lost create)",
			Want: mr.ReservedTagsRule,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				lb := newLB(NamespaceA, "uid-tag", nil)
				lb.Spec.ForProvider.Tags = map[string]string{mr.TagUID: "00000000-0000-0000-0000-000000000000"}
				return APIRefusal("create LoadBalancer", Client(EditorA).Create(ctx, lb))
			},
		},
	)
}
