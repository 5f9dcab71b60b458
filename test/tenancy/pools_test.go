package tenancy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// Pools of other namespaces (docs/pod-addresses.md#pools-of-other-namespaces):
// tenant-b's pool serves tenant-b only until its owner says otherwise, and
// no request of tenant-a's, in any syntax, takes a port there; nor can she
// grant herself the consent. A Pod asks for at most --max-ports-per-pod
// addresses.
func init() { //nolint:gochecknoinits // each area registers its cases (main_test.go)
	// notServed is how the provider refuses tenant-a a port of tenant-b's
	// pool.
	notServed := "PortPool " + NamespaceB + "/" + PoolB + " does not serve namespace " + NamespaceA
	attack(
		Attack{
			Name: "tenant-pod-other-pool", Who: TenantA,
			What: "a Pod annotated for tenant-b's pool (ours: 7000/TCP tenant-b/games)",
			Want: notServed,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				if _, err := Pod(ctx, TenantA, NamespaceA, "borrow-ours", "10.1.3.1", map[string]string{
					podannotation.AnnotationPorts: "game/TCP " + NamespaceB + "/" + PoolB,
				}); err != nil {
					return "", err
				}
				return Refused(ctx, NamespaceA, "borrow-ours", notServed)
			},
			Cleanup: func(ctx context.Context, t *testing.T) { DeletePod(ctx, t, NamespaceA, "borrow-ours") },
		},
		Attack{
			Name: "tenant-pod-other-pool-bcs", Who: TenantA,
			What: "a Pod annotated for tenant-b's pool in bcs's syntax (games.tenant-b TCP 7000)",
			Want: notServed,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				if _, err := Pod(ctx, TenantA, NamespaceA, "borrow-bcs", "10.1.3.2", map[string]string{
					podannotation.BCSAnnotationEnabled: "true",
					podannotation.BCSAnnotationPorts:   PoolB + "." + NamespaceB + " TCP 7000",
				}); err != nil {
					return "", err
				}
				return Refused(ctx, NamespaceA, "borrow-bcs", notServed)
			},
			Cleanup: func(ctx context.Context, t *testing.T) { DeletePod(ctx, t, NamespaceA, "borrow-bcs") },
		},
		Attack{
			Name: "tenant-policy-other-pool", Who: TenantA,
			What: "a PodAddressPolicy of her namespace naming tenant-b's pool, and a Pod it selects",
			Want: notServed,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				pol := policy(NamespaceA, "borrow", PoolB)
				pol.Spec.Ports[0].Pools[0].Namespace = NamespaceB
				if err := Client(TenantA).Create(ctx, pol); err != nil {
					return "", err
				}
				if _, err := Pod(ctx, TenantA, NamespaceA, "borrow", "10.1.3.3", nil); err != nil {
					return "", err
				}
				return Refused(ctx, NamespaceA, "borrow", notServed)
			},
			Cleanup: func(ctx context.Context, t *testing.T) {
				DeletePod(ctx, t, NamespaceA, "borrow")
				if err := Client(TenantA).Delete(ctx, policy(NamespaceA, "borrow", PoolB)); err != nil {
					t.Fatal(err)
				}
			},
		},
		Attack{
			Name: "tenant-grants-herself", Who: TenantA,
			What: "patch tenant-b's pool's spec.consumers to let her namespace in",
			Want: `cannot patch resource "portpools" in API group "clb.tencentcloud.m.crossplane.io" in the namespace "tenant-b"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				pp := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceB, Name: PoolB}}
				patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"consumers":{"namespaces":{"from":"All"}}}}`))
				return APIRefusal("patch PortPool", Client(TenantA).Patch(ctx, pp, patch))
			},
		},
		Attack{
			Name: "tenant-relabels-namespace", Who: TenantA,
			What: "label her namespace team=b, to match a pool selector meant for tenant-b",
			Want: `cannot patch resource "namespaces"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: NamespaceA}}
				patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"team":"b"}}}`))
				return APIRefusal("patch Namespace", Client(TenantA).Patch(ctx, ns, patch))
			},
		},
		Attack{
			Name: "tenant-drains-own-pool", Who: TenantA,
			What: "a Pod asking for 40 ports of her own pool, more than --max-ports-per-pod (32)",
			Want: "the provider allows at most 32 per Pod (--max-ports-per-pod)",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				items := make([]string, 40)
				for i := range items {
					items[i] = fmt.Sprintf("%d/TCP %s", 9000+i, PoolA)
				}
				if _, err := Pod(ctx, TenantA, NamespaceA, "greedy", "10.1.3.4", map[string]string{
					podannotation.AnnotationPorts: strings.Join(items, "; "),
				}); err != nil {
					return "", err
				}
				return Refused(ctx, NamespaceA, "greedy", "the provider allows at most 32 per Pod (--max-ports-per-pod)")
			},
			Cleanup: func(ctx context.Context, t *testing.T) { DeletePod(ctx, t, NamespaceA, "greedy") },
		},
	)
	allow(Allowed{
		Name: "tenant-pod-granted-pool", Who: TenantA,
		What: "tenant-b's admin lets team a in (spec.consumers selector team=a): her Pod binds there; taken back, its target goes",
		Try: func(ctx context.Context, t *testing.T) error {
			setConsumers := func(c *clbv1alpha1.PoolConsumers) error {
				return testenv.Eventually(ctx, wait, func() error {
					pp := &clbv1alpha1.PortPool{}
					if err := kube.Get(ctx, client.ObjectKey{Namespace: NamespaceB, Name: PoolB}, pp); err != nil {
						return err
					}
					pp.Spec.Consumers = c
					return Client(Admin).Update(ctx, pp)
				})
			}
			if err := setConsumers(&clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{
				From: clbv1alpha1.ConsentSelector, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
			}}); err != nil {
				return err
			}
			if _, err := Pod(ctx, TenantA, NamespaceA, "guest", "10.1.3.5", map[string]string{
				podannotation.AnnotationPorts: "game/TCP " + NamespaceB + "/" + PoolB,
			}); err != nil {
				return err
			}
			if err := Bound(ctx, NamespaceA, "guest", w.LB[NamespaceB], "10.1.3.5"); err != nil {
				return err
			}
			if err := setConsumers(nil); err != nil {
				return err
			}
			if _, err := Refused(ctx, NamespaceA, "guest", notServed); err != nil {
				return err
			}
			return testenv.Eventually(ctx, wait, func() error {
				for _, l := range cloud.Inventory().LoadBalancers {
					for _, li := range l.Listeners {
						for _, tg := range li.Targets {
							if tg.IP == "10.1.3.5" {
								return errors.Errorf("target 10.1.3.5 still on %s", l.ID)
							}
						}
					}
				}
				pa := &v1alpha1.PodAddress{}
				if err := kube.Get(ctx, client.ObjectKey{Namespace: NamespaceA, Name: "guest"}, pa); err != nil {
					return err
				}
				if pa.Status.State != v1alpha1.StatePoolNotAllowed || len(pa.Status.Bindings) != 0 {
					return errors.Errorf("state %s, bindings %s", pa.Status.State, jsonOf(pa.Status.Bindings))
				}
				return nil
			})
		},
	})
}
