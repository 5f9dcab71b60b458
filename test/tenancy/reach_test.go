package tenancy

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	pcv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// What the tenant role (examples/provider/tenants.yaml) keeps from a team:
// the objects that spend the cloud account or say what a Pod is bound to.
//
//nolint:gochecknoinits // each area registers its cases from its file, as the suite asks
func init() {
	attack(
		Attack{
			Name: "tenant-makes-pool", Who: TenantA,
			What: "create a PortPool with autoCreate (up to 5 new load balancers) in her own namespace",
			Want: `cannot create resource "portpools"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				pp := &clbv1alpha1.PortPool{
					ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "mine"},
					Spec: clbv1alpha1.PortPoolSpec{ForProvider: clbv1alpha1.PortPoolParameters{
						StartPort: 30000, EndPort: 30099,
						AutoCreate: &clbv1alpha1.PoolAutoCreate{MaxLoadBalancers: 5, Template: clbv1alpha1.LoadBalancerParameters{Type: clb.Ptr("OPEN")}},
					}},
				}
				return APIRefusal("create PortPool", Client(TenantA).Create(ctx, pp))
			},
		},
		Attack{
			Name: "tenant-buys-load-balancer", Who: TenantA,
			What: "create a LoadBalancer in her own namespace through the default ClusterProviderConfig",
			Want: `cannot create resource "loadbalancers"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				lb := &clbv1alpha1.LoadBalancer{
					ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "mine"},
					Spec:       clbv1alpha1.LoadBalancerSpec{ForProvider: clbv1alpha1.LoadBalancerParameters{Type: clb.Ptr("OPEN")}},
				}
				return APIRefusal("create LoadBalancer", Client(TenantA).Create(ctx, lb))
			},
		},
		Attack{
			Name: "tenant-forges-podaddress", Who: TenantA,
			What: "create a PodAddress in her own namespace that binds her Pod to tenant-b's pool",
			Want: `cannot create resource "podaddresses"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				pa := &v1alpha1.PodAddress{
					ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "forged"},
					Spec: v1alpha1.PodAddressSpec{Ports: []v1alpha1.PortRequest{{
						Port: intOrString("game"), Protocol: "TCP", Pools: []v1alpha1.PoolRef{{Namespace: NamespaceB, Name: PoolB}},
					}}},
				}
				return APIRefusal("create PodAddress", Client(TenantA).Create(ctx, pa))
			},
		},
		Attack{
			Name: "tenant-edits-podaddress-status", Who: TenantA,
			What: "write the status of a PodAddress of her namespace to claim a bound address",
			Want: `cannot update resource "podaddresses/status"`,
			Try: func(ctx context.Context, t *testing.T) (string, error) {
				pa := &v1alpha1.PodAddress{}
				if err := kube.Get(ctx, client.ObjectKey{Namespace: NamespaceA, Name: "own-pod"}, pa); err != nil {
					// The allowed paths have not run yet: any name does.
					pa = &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "own-pod"}}
				}
				pa.Status.State = v1alpha1.StateBound
				return APIRefusal("update PodAddress status", Client(TenantA).Status().Update(ctx, pa))
			},
		},
		Attack{
			Name: "tenant-policy-elsewhere", Who: TenantA,
			What: "create a PodAddressPolicy in tenant-b's namespace",
			Want: `cannot create resource "podaddresspolicies" in API group "network.tencentcloud.m.crossplane.io" in the namespace "tenant-b"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				pol := policy(NamespaceB, "intruder", PoolB)
				return APIRefusal("create PodAddressPolicy", Client(TenantA).Create(ctx, pol))
			},
		},
		Attack{
			Name: "tenant-isolates-other-pod", Who: TenantA,
			What: "annotate a Pod of tenant-b isolated (its targets would leave the load balancer)",
			Want: `cannot patch resource "pods" in API group "" in the namespace "tenant-b"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceB, Name: "resident"}}
				patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"`+podannotation.AnnotationIsolated+`":"true"}}}`))
				return APIRefusal("patch Pod", Client(TenantA).Patch(ctx, p, patch))
			},
		},
		Attack{
			Name: "tenant-reads-credentials", Who: TenantA,
			What: "read the cloud credentials Secret the ClusterProviderConfig names",
			Want: `cannot get resource "secrets"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				cpc := &unstructured.Unstructured{}
				cpc.SetAPIVersion("tencentcloud.crossplane.io/v1alpha1")
				cpc.SetKind("ClusterProviderConfig")
				if err := kube.Get(ctx, client.ObjectKey{Name: "default"}, cpc); err != nil {
					return "", err
				}
				ns, _, _ := unstructured.NestedString(cpc.Object, "spec", "credentials", "secretRef", "namespace")
				name, _, _ := unstructured.NestedString(cpc.Object, "spec", "credentials", "secretRef", "name")
				if name == "" {
					return "", errors.New("the default ClusterProviderConfig names no Secret")
				}
				return APIRefusal("get Secret", Client(TenantA).Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{}))
			},
		},
		Attack{
			Name: "tenant-makes-providerconfig", Who: TenantA,
			What: "create a ProviderConfig in her namespace pointing at her own Secret",
			Want: `cannot create resource "providerconfigs"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				pc := &pcv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "mine"}}
				pc.Spec.Credentials.Source = xpv2.CredentialsSourceSecret
				return APIRefusal("create ProviderConfig", Client(TenantA).Create(ctx, pc))
			},
		},
		Attack{
			Name: "tenant-plays-agent", Who: TenantA,
			What: "create a RemotePod in her namespace, as a workload cluster's agent would",
			Want: `cannot create resource "remotepods"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				rp := &v1alpha1.RemotePod{
					ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "tenant-a.fake"},
					Spec:       v1alpha1.RemotePodSpec{Cluster: "fake", PodNamespace: "x", PodName: "fake", PodUID: "1", PodIP: "10.0.0.9"},
				}
				return APIRefusal("create RemotePod", Client(TenantA).Create(ctx, rp))
			},
		},
		Attack{
			Name: "anonymous-lists-addresses", Who: Anonymous,
			What: "list every PodAddress of the cluster",
			Want: `"system:anonymous" cannot list resource "podaddresses"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return Raw(ctx, Anonymous, http.MethodGet, "/apis/network.tencentcloud.m.crossplane.io/v1alpha1/podaddresses", nil)
			},
		},
	)
	allow(
		Allowed{
			Name: "tenant-pod-own-pool", Who: TenantA,
			What: "a Pod annotated for her own namespace's pool gets an address there",
			Try: func(ctx context.Context, t *testing.T) error {
				if _, err := Pod(ctx, TenantA, NamespaceA, "own-pod", "10.1.0.10", map[string]string{
					podannotation.AnnotationPorts: "game/TCP " + PoolA,
				}); err != nil {
					return err
				}
				return Bound(ctx, NamespaceA, "own-pod", w.LB[NamespaceA], "10.1.0.10")
			},
		},
		Allowed{
			Name: "tenant-policy-own-pool", Who: TenantB,
			What: "a PodAddressPolicy of her namespace gives her Pod an address from her pool",
			Try: func(ctx context.Context, t *testing.T) error {
				if err := Client(TenantB).Create(ctx, policy(NamespaceB, "voice", PoolB)); err != nil {
					return err
				}
				if _, err := Pod(ctx, TenantB, NamespaceB, "voice", "10.2.0.10", nil); err != nil {
					return err
				}
				return Bound(ctx, NamespaceB, "voice", w.LB[NamespaceB], "10.2.0.10")
			},
		},
		Allowed{
			Name: "tenant-reads-own-addresses", Who: TenantA,
			What: "list the PodAddresses and pools of her namespace",
			Try: func(ctx context.Context, t *testing.T) error {
				if err := Client(TenantA).List(ctx, &v1alpha1.PodAddressList{}, client.InNamespace(NamespaceA)); err != nil {
					return err
				}
				return Client(TenantA).List(ctx, &clbv1alpha1.PortPoolList{}, client.InNamespace(NamespaceA))
			},
		},
	)
}

// policy asks, for the Pods labelled app=<name> of ns, a UDP address for
// their port "voice" from pool of ns.
func policy(ns, name, pool string) *v1alpha1.PodAddressPolicy {
	return &v1alpha1.PodAddressPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PodAddressPolicySpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Ports:    []v1alpha1.PortRequest{{Port: intOrString("voice"), Protocol: "UDP", Pools: []v1alpha1.PoolRef{{Name: pool}}}},
		},
	}
}

func intOrString(s string) intstr.IntOrString { return intstr.FromString(s) }
