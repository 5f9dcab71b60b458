package tenancy

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// The provider's own records, tried by a namespace's editor: RBAC lets her
// write them (crossplane-edit), records-policy.yaml does not.
const recordsPod = "editor-own"

// targetPodB is a Pod of tenant-b, at targetIPB.
const (
	targetPodB = "target-b"
	targetIPB  = "10.1.9.2"
)

// recordsNeed is the refusal records-policy.yaml gives an editor.
const recordsNeed = "are the provider's records: only the provider"

//nolint:gochecknoinits // each area registers its cases from its file, as the suite asks
func init() {
	// A Pod of tenant-a bound in its own pool: its PodAddress is what the
	// editor of tenant-a tries to change.
	prepare(func(ctx context.Context, t *testing.T) {
		pool := &clbv1alpha1.PortPool{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: NamespaceA, Name: PoolA}, pool); err != nil {
			t.Fatal(err)
		}
		had := pool.Status.AtProvider.Bindings
		if _, err := Pod(ctx, Admin, NamespaceA, recordsPod, "10.1.9.1", map[string]string{
			podannotation.AnnotationPorts: "game/TCP " + NamespaceA + "/" + PoolA,
		}); err != nil {
			t.Fatal(err)
		}
		if err := Bound(ctx, NamespaceA, recordsPod, w.LB[NamespaceA], "10.1.9.1"); err != nil {
			t.Fatal(err)
		}
		// The address told on the Pod too, so every snapshot sees it.
		eventuallyT(t, "the address on Pod "+recordsPod, func() error {
			p := &corev1.Pod{}
			if err := kube.Get(ctx, client.ObjectKey{Namespace: NamespaceA, Name: recordsPod}, p); err != nil {
				return err
			}
			if p.Annotations[podannotation.AnnotationAddresses] == "" {
				return errors.New("no address annotation yet")
			}
			return nil
		})
		// And counted by its pool.
		eventuallyT(t, "pool "+PoolA+" counts the binding", func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
				return err
			}
			if pool.Status.AtProvider.Bindings != had+1 {
				return errors.Errorf("%d bindings, want %d", pool.Status.AtProvider.Bindings, had+1)
			}
			return nil
		})
	})

	// A Pod of tenant-b, which lets no other namespace's TargetSets in.
	prepare(func(ctx context.Context, t *testing.T) {
		if _, err := Pod(ctx, Admin, NamespaceB, targetPodB, targetIPB, nil); err != nil {
			t.Fatal(err)
		}
	})

	attack(
		Attack{
			Name: "editor-targets-other-pod", Who: EditorA,
			What: "a TargetSet on her pool's listener whose plain-IP target is the IP of a Pod of tenant-b (by name its consent annotation would refuse it)",
			Want: "spec.forProvider.targets[0]: " + targetIPB + " is the IP of Pod tenant-b/" + targetPodB + ", which does not let TargetSets of namespace tenant-a register it",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				pa := &v1alpha1.PodAddress{}
				if err := kube.Get(ctx, client.ObjectKey{Namespace: NamespaceA, Name: recordsPod}, pa); err != nil {
					return "", err
				}
				lb, lis := w.LB[NamespaceA], pa.Status.Bindings[0].ListenerIDs["TCP"]
				ts := &clbv1alpha1.TargetSet{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "takes-b"},
					Spec: clbv1alpha1.TargetSetSpec{ForProvider: clbv1alpha1.TargetSetParameters{LoadBalancerID: &lb, ListenerID: &lis,
						Targets: []clbv1alpha1.Target{{IP: targetIPB, Port: 7000}}}}}
				return managedRefusal(ctx, EditorA, ts, "which does not let TargetSets")
			},
			Cleanup: deleteManaged(EditorA, &clbv1alpha1.TargetSet{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "takes-b"}}),
		},
		Attack{
			Name: "editor-forges-podaddress", Who: EditorA,
			What: "create a PodAddress with the provider's finalizer and a created-bindings record naming tenant-b's pool (its deletion would deregister tenant-b's target)",
			Want: "PodAddresses " + recordsNeed,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				pa := &v1alpha1.PodAddress{
					ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "forged", Finalizers: []string{podaddress.Finalizer},
						Annotations: map[string]string{v1alpha1.AnnotationCreatedBindings: NamespaceB + "/" + PoolB}},
					Spec: v1alpha1.PodAddressSpec{Ports: []v1alpha1.PortRequest{{
						Port: intOrString("game"), Protocol: "TCP", Pools: []v1alpha1.PoolRef{{Namespace: NamespaceB, Name: PoolB}},
					}}},
				}
				return APIRefusal("create PodAddress", Client(EditorA).Create(ctx, pa))
			},
		},
		Attack{
			Name: "editor-writes-podaddress-status", Who: EditorA,
			What: "write the status of her Pod's PodAddress to record tenant-b's load balancer and an EIP id as hers",
			Want: "PodAddresses (their status) " + recordsNeed,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				pa := &v1alpha1.PodAddress{}
				if err := kube.Get(ctx, client.ObjectKey{Namespace: NamespaceA, Name: recordsPod}, pa); err != nil {
					return "", err
				}
				if len(pa.Status.Bindings) == 0 {
					return "", errors.New("the PodAddress has no binding")
				}
				pa.Status.Bindings[0].LoadBalancerID = w.LB[NamespaceB]
				pa.Status.EIP = &v1alpha1.EIPBinding{State: "Bound", AddressID: "eip-00000001"}
				return APIRefusal("update PodAddress status", Client(EditorA).Status().Update(ctx, pa))
			},
		},
		Attack{
			Name: "editor-deletes-podaddress", Who: EditorA,
			What: "delete the PodAddress of a bound Pod of her namespace",
			Want: "PodAddresses " + recordsNeed,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				pa := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: recordsPod}}
				return APIRefusal("delete PodAddress", Client(EditorA).Delete(ctx, pa))
			},
		},
		Attack{
			Name: "editor-plays-agent", Who: EditorA,
			What: "create a RemotePod in her namespace, as a workload cluster's agent would",
			Want: "RemotePods " + recordsNeed + ", the agent of the RemotePod's workload cluster",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				rp := &v1alpha1.RemotePod{
					ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "fake.pod"},
					Spec:       v1alpha1.RemotePodSpec{Cluster: "fake", PodNamespace: "x", PodName: "pod", PodUID: "1", PodIP: "10.0.0.9"},
				}
				return APIRefusal("create RemotePod", Client(EditorA).Create(ctx, rp))
			},
		},
		Attack{
			Name: "editor-makes-workloadcluster", Who: EditorA,
			What: "create a WorkloadCluster in her namespace declaring 10.0.0.0/8 (every team's Pods) as its podCIDRs",
			Want: "WorkloadClusters " + recordsNeed,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				wc := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "mine"},
					Spec: v1alpha1.WorkloadClusterSpec{PodCIDRs: []string{"10.0.0.0/8"}, NodeCIDRs: []string{"10.0.0.0/8"}}}
				return APIRefusal("create WorkloadCluster", Client(EditorA).Create(ctx, wc))
			},
		},
		Attack{
			Name: "editor-writes-clbpodbinding", Who: EditorA,
			What: "create a CLBPodBinding (tke-extend's view of a Pod's ports) for her Pod naming tenant-b's pool",
			Want: "CLBPodBindings " + recordsNeed,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				cpb := &tkev1alpha1.CLBPodBinding{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: recordsPod},
					Spec: tkev1alpha1.CLBBindingSpec{Ports: []tkev1alpha1.PortEntry{{Port: 7000, Protocol: "TCP", Pools: []string{NamespaceB + "/" + PoolB}}}}}
				return APIRefusal("create CLBPodBinding", Client(EditorA).Create(ctx, cpb))
			},
		},
	)
}
