package tenancy

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

// What the platform team and tenant-b give, and what they keep: two load
// balancers made in the console (one granted to tenant-a by id, one to
// nobody), and two LoadBalancers of tenant-b, one private and one that lets
// every namespace build on it with at most one listener each.
var given struct {
	console, granted string // ids of the console-made load balancers
	private, shared  string // ids of tenant-b's LoadBalancers
	ownerListener    string // id of tenant-b's listener on the shared one
}

const (
	sharedLB  = "shared"
	privateLB = "private"
	// firstListener is tenant-a's one listener on the shared load
	// balancer, made by her editor through a reference into tenant-b.
	firstListener = "on-shared"
)

//nolint:gochecknoinits // each area registers its cases from its file, as the suite asks
func init() {
	prepare(func(ctx context.Context, t *testing.T) {
		given.console = emulatortest.ExistingLB(t, cloud, emulator.DefaultRegion, "console-made", wait)
		given.granted = emulatortest.ExistingLB(t, cloud, emulator.DefaultRegion, "console-granted", wait)
		cpc := &clusterv1alpha1.ClusterProviderConfig{}
		if err := kube.Get(ctx, client.ObjectKey{Name: "default"}, cpc); err != nil {
			t.Fatal(err)
		}
		cpc.Spec.Consumers.Grants = []clusterv1alpha1.ObjectGrant{{
			IDs:        []string{given.granted},
			Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentSelector, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}},
		}}
		if err := kube.Update(ctx, cpc); err != nil {
			t.Fatal(err)
		}

		one := int64(1)
		shared := newLB(NamespaceB, sharedLB, nil)
		shared.Spec.Consumers = &clbv1alpha1.LoadBalancerConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}, MaxListenersPerNamespace: &one}
		private := newLB(NamespaceB, privateLB, nil)
		owner := &clbv1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceB, Name: "owner"},
			Spec: clbv1alpha1.ListenerSpec{ForProvider: clbv1alpha1.ListenerParameters{Port: 9300, Protocol: "TCP",
				LoadBalancerIDRef: &xpv2.NamespacedReference{Name: sharedLB}}}}
		for _, o := range []client.Object{shared, private, owner} {
			if err := kube.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		first := &clbv1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: firstListener},
			Spec: clbv1alpha1.ListenerSpec{ForProvider: clbv1alpha1.ListenerParameters{Port: 9301, Protocol: "TCP",
				LoadBalancerIDRef: &xpv2.NamespacedReference{Name: sharedLB, Namespace: NamespaceB}}}}
		if err := Client(EditorA).Create(ctx, first); err != nil {
			t.Fatal(err)
		}
		for _, o := range []*clbv1alpha1.LoadBalancer{shared, private} {
			if err := readyManaged(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		for _, l := range []*clbv1alpha1.Listener{owner, first} {
			if err := readyManaged(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		given.shared, given.private = meta.GetExternalName(shared), meta.GetExternalName(private)
		given.ownerListener = meta.GetExternalName(owner)
	})

	noGrant := "carries no owner tags (made in the console or by another tool): no grant of ClusterProviderConfig default gives it to namespace tenant-a"
	attack(
		Attack{
			Name: "editor-imports-console-lb", Who: EditorA,
			What: "import, Observe only, a load balancer made in the console that no grant gives her namespace",
			Want: noGrant,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				lb := observeOnly(NamespaceA, "console", given.console)
				return managedRefusal(ctx, EditorA, lb, noGrant)
			},
			Cleanup: deleteManaged(EditorA, newLB(NamespaceA, "console", nil)),
		},
		Attack{
			Name: "editor-listener-on-console-lb", Who: EditorA,
			What: "create a Listener on a load balancer made in the console that no grant gives her namespace",
			Want: noGrant,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return managedRefusal(ctx, EditorA, listenerByID(NamespaceA, "on-console", given.console, 9310), noGrant)
			},
			Cleanup: deleteManaged(EditorA, listenerByID(NamespaceA, "on-console", "", 0)),
		},
		Attack{
			Name: "editor-pool-on-console-lb", Who: EditorA,
			What: "a PortPool of hers over a load balancer made in the console that no grant gives her namespace",
			Want: noGrant,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				pp := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "on-console"},
					Spec: clbv1alpha1.PortPoolSpec{ForProvider: clbv1alpha1.PortPoolParameters{StartPort: 31200, EndPort: 31209,
						LoadBalancerIDs: []string{given.console}}}}
				return managedRefusal(ctx, EditorA, pp, noGrant)
			},
			Cleanup: deleteManaged(EditorA, &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "on-console"}}),
		},
		Attack{
			Name: "editor-listener-on-private-lb", Who: EditorA,
			What: "create a Listener, by id, on a load balancer of tenant-b's LoadBalancer that lets no other namespace in",
			Want: "whose spec.consumers.namespaces (from: Same (its own namespace only)) does not let namespace tenant-a in",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return managedRefusal(ctx, EditorA, listenerByID(NamespaceA, "on-private", given.private, 9311), "does not let namespace tenant-a in")
			},
			Cleanup: deleteManaged(EditorA, listenerByID(NamespaceA, "on-private", "", 0)),
		},
		Attack{
			Name: "editor-ref-to-private-lb", Who: EditorA,
			What: "create a Listener whose loadBalancerIdRef names tenant-b's private LoadBalancer",
			Want: "spec.forProvider.loadBalancerIdRef names namespace tenant-b (its spec.consumers.namespaces from: Same (its own namespace only) does not let tenant-a in)",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				l := &clbv1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "ref-private"},
					Spec: clbv1alpha1.ListenerSpec{ForProvider: clbv1alpha1.ListenerParameters{Port: 9312, Protocol: "TCP",
						LoadBalancerIDRef: &xpv2.NamespacedReference{Name: privateLB, Namespace: NamespaceB}}}}
				return managedRefusal(ctx, EditorA, l, "does not let tenant-a in")
			},
			Cleanup: deleteManaged(EditorA, listenerByID(NamespaceA, "ref-private", "", 0)),
		},
		Attack{
			Name: "editor-imports-shared-lb", Who: EditorA,
			What: "import the load balancer tenant-b shares with every namespace (sharing lets others build on it, not manage it)",
			Want: "belongs to namespace tenant-b, not tenant-a",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return managedRefusal(ctx, EditorA, observeOnly(NamespaceA, "import-shared", given.shared), "belongs to namespace tenant-b, not tenant-a")
			},
			Cleanup: deleteManaged(EditorA, newLB(NamespaceA, "import-shared", nil)),
		},
		Attack{
			Name: "editor-targets-owner-listener", Who: EditorA,
			What: "a TargetSet on tenant-b's own listener of the load balancer tenant-b shares with her (it would replace its targets)",
			Want: "is held by no Listener of namespace tenant-a: on a load balancer of another namespace, a namespace acts only on its own listeners",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				id, lis := given.shared, given.ownerListener
				ts := &clbv1alpha1.TargetSet{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "on-owner-listener"},
					Spec: clbv1alpha1.TargetSetSpec{ForProvider: clbv1alpha1.TargetSetParameters{LoadBalancerID: &id, ListenerID: &lis}}}
				return managedRefusal(ctx, EditorA, ts, "is held by no Listener of namespace tenant-a")
			},
			Cleanup: deleteManaged(EditorA, &clbv1alpha1.TargetSet{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "on-owner-listener"}}),
		},
		Attack{
			Name: "editor-over-listener-bound", Who: EditorA,
			What: "a second Listener on the load balancer tenant-b shares with at most one listener per namespace",
			Want: "namespace tenant-a holds 1 listeners on load balancer",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return managedRefusal(ctx, EditorA, listenerByID(NamespaceA, "second", given.shared, 9313), "its bound there")
			},
			Cleanup: deleteManaged(EditorA, listenerByID(NamespaceA, "second", "", 0)),
		},
		Attack{
			Name: "editor-pool-over-listener-bound", Who: EditorA,
			What: "a PortPool of hers whose 10 listeners would go on the load balancer tenant-b shares with at most one listener per namespace",
			Want: "the pool puts 10 listeners on load balancer",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				pp := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "on-shared"},
					Spec: clbv1alpha1.PortPoolSpec{ForProvider: clbv1alpha1.PortPoolParameters{StartPort: 31300, EndPort: 31309,
						LoadBalancerIDs: []string{given.shared}}}}
				return managedRefusal(ctx, EditorA, pp, "over namespace tenant-a's bound there")
			},
			Cleanup: deleteManaged(EditorA, &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "on-shared"}}),
		},
	)

	allow(
		Allowed{
			Name: "editor-granted-import", Who: EditorA,
			What: "import, Observe only, the console-made load balancer the platform team granted her namespace by id; deleting the import leaves it in the cloud",
			Try: func(ctx context.Context, t *testing.T) error {
				lb := observeOnly(NamespaceA, "granted", given.granted)
				if err := Client(EditorA).Create(ctx, lb); err != nil {
					return err
				}
				if err := readyManaged(ctx, lb); err != nil {
					return err
				}
				deleteManaged(EditorA, lb)(ctx, t)
				if _, ok := cloud.Inventory().LoadBalancer(given.granted); !ok {
					return errors.Errorf("load balancer %s left the cloud with its Observe-only import", given.granted)
				}
				return nil
			},
		},
		Allowed{
			Name: "editor-listener-on-shared-lb", Who: EditorA,
			What: "her Listener, by a reference into tenant-b, on the load balancer tenant-b shares: made, then deleted",
			Try: func(ctx context.Context, t *testing.T) error {
				l := listenerByID(NamespaceA, firstListener, "", 0)
				if err := readyManaged(ctx, l); err != nil {
					return err
				}
				id := meta.GetExternalName(l)
				if !cloudHasListener(given.shared, id) {
					return errors.Errorf("listener %s is not on load balancer %s", id, given.shared)
				}
				deleteManaged(EditorA, l)(ctx, t)
				if cloudHasListener(given.shared, id) {
					return errors.Errorf("listener %s is still on load balancer %s", id, given.shared)
				}
				return nil
			},
		},
	)
}

// observeOnly is an Observe-only import of the load balancer id.
func observeOnly(ns, name, id string) *clbv1alpha1.LoadBalancer {
	lb := newLB(ns, name, nil)
	lb.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
	meta.SetExternalName(lb, id)
	return lb
}

// listenerByID is a TCP Listener on the load balancer id.
func listenerByID(ns, name, id string, port int64) *clbv1alpha1.Listener {
	l := &clbv1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clbv1alpha1.ListenerSpec{ForProvider: clbv1alpha1.ListenerParameters{Port: port, Protocol: "TCP"}}}
	if id != "" {
		l.Spec.ForProvider.LoadBalancerID = &id
	}
	return l
}

// cloudHasListener reports whether the cloud's load balancer lb holds the
// listener id.
func cloudHasListener(lb, id string) bool {
	got, ok := cloud.Inventory().LoadBalancer(lb)
	if !ok {
		return false
	}
	for _, l := range got.Listeners {
		if l.ID == id {
			return true
		}
	}
	return false
}
