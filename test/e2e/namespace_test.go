package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpmeta "github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/deployed"
)

// leavingPods is how many game servers the leaving team runs.
const leavingPods = 3

// TestNamespaceDeletion deletes a team's namespace, as a platform team
// does when the team leaves, while it holds a PodPublicAddress (its
// PortPool and load balancer) and running game servers bound through it:
// the real namespace controller and garbage collector delete everything,
// the provider lets each resource go, and the cloud and the namespace end
// empty. Then again with the provider's leader SIGKILLed right after the
// deletion began.
func TestNamespaceDeletion(t *testing.T) {
	for _, tc := range []struct {
		name string
		kill bool
	}{{"quiet", false}, {"provider-killed", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := "leaving-" + tc.name
			ctx := context.Background()
			image := gameServer(t, ns)
			xr := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "workload.tencentcloud.crossplane.io/v1alpha1",
				"kind":       "PodPublicAddress",
				"metadata":   map[string]any{"namespace": ns, "name": "rooms"},
				"spec": map[string]any{
					"selector":      map[string]any{"matchLabels": map[string]any{"app": "room"}},
					"ports":         []any{map[string]any{"port": int64(deployed.GamePort), "protocol": "TCP_UDP"}},
					"loadBalancers": map[string]any{"template": map[string]any{"type": "OPEN"}, "count": int64(1)},
					"portRange":     map[string]any{"start": int64(7300), "end": int64(7309)},
				},
			}}
			if err := kube.Create(ctx, xr); err != nil {
				t.Fatal(err)
			}
			if err := kube.Create(ctx, deployed.GameStatefulSet(ns, "room", image, leavingPods)); err != nil {
				t.Fatal(err)
			}
			ids := boundIn(t, ns, leavingPods)

			began := time.Now()
			if err := kube.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatal(err)
			}
			if tc.kill {
				leader, _, _ := killLeader(t)
				t.Logf("the leader %s SIGKILLed right after the deletion began", leader.Name)
			}
			eventually(t, "namespace "+ns+" gone and its load balancers deleted", func() error {
				var left []string
				for _, id := range ids {
					if _, ok := cluster.Cloud.Inventory().LoadBalancer(id); ok {
						left = append(left, "load balancer "+id)
					}
				}
				err := kube.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
				switch {
				case err == nil:
					left = append(left, "the namespace; "+managedState(ctx, ns))
				case !kerrors.IsNotFound(err):
					return err
				}
				if len(left) > 0 {
					return fmt.Errorf("left: %s", strings.Join(left, ", "))
				}
				return nil
			})
			t.Logf("namespace %s with %d bound game servers deleted: namespace and load balancers gone in %s", ns, leavingPods, time.Since(began).Round(time.Millisecond))
		})
	}
}

// boundIn waits until n PodAddresses of ns are bound and returns the ids
// of the namespace's load balancers.
func boundIn(t *testing.T, ns string, n int) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	eventually(t, fmt.Sprintf("%d Pods of %s bound, their load balancers Ready", n, ns), func() error {
		pas := &networkv1alpha1.PodAddressList{}
		if err := kube.List(ctx, pas, client.InNamespace(ns)); err != nil {
			return err
		}
		bound := 0
		for _, pa := range pas.Items {
			if pa.Status.State == networkv1alpha1.StateBound {
				bound++
			}
		}
		if bound != n {
			return fmt.Errorf("%d of %d PodAddresses bound", bound, n)
		}
		lbs := &clbv1alpha1.LoadBalancerList{}
		if err := kube.List(ctx, lbs, client.InNamespace(ns)); err != nil {
			return err
		}
		ids = ids[:0]
		for i := range lbs.Items {
			if id := xpmeta.GetExternalName(&lbs.Items[i]); id != "" {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return fmt.Errorf("no load balancer of %s has an id", ns)
		}
		return nil
	})
	return slices.Clone(ids)
}
