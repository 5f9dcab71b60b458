package crossplane

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpextv1alpha1 "github.com/crossplane/crossplane/apis/v2/apiextensions/v1alpha1"
	pkgv1 "github.com/crossplane/crossplane/apis/v2/pkg/v1"

	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal"
)

var (
	claimPPA    = schema.GroupVersionKind{Group: "claims.workload.tencentcloud.crossplane.io", Version: "v1alpha1", Kind: "PodPublicAddress"}
	xrPPA       = schema.GroupVersionKind{Group: "workload.tencentcloud.crossplane.io", Version: "v1alpha1", Kind: "PodPublicAddress"}
	xrDedicated = schema.GroupVersionKind{Group: "workload.tencentcloud.crossplane.io", Version: "v1alpha1", Kind: "DedicatedCLBService"}
)

// TestInstallAndCompose is one user's story, step by step: each step needs
// the ones before it.
func TestInstallAndCompose(t *testing.T) {
	for _, s := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"tke-extend's Helm release left its CLBPortPool CRD and a CLBPortPool", helmCRDBeforeInstall},
		{"packages install from the registry and become healthy", installPackages},
		{"activating CLBPortPool takes the Helm CRD over and keeps the CLBPortPool", helmCRDTakenOver},
		{"safe-start: no managed resource CRDs until activated, then the controllers start", activate},
		{"a claim with existing load balancers gives its Pods addresses", claimWithExisting},
		{"a v2 composite with a template creates its load balancers", compositeWithTemplate},
		{"a DedicatedCLBService with only apiVersion changed works", dedicatedCLBService},
		{"crossplane resource trace shows the trees and their readiness", traced},
		{"Argo CD: what cannot become ready is Degraded, what waits for it Progressing", failingComposites},
	} {
		if !t.Run(s.name, s.fn) {
			return
		}
	}
}

func installPackages(t *testing.T) {
	ctx := context.Background()
	if err := local.Install(ctx, version); err != nil {
		t.Fatal(err)
	}
	if err := local.WaitHealthy(ctx, wait); err != nil {
		t.Fatal(err)
	}
	// The provider's CRDs are the package manager's: owned by the active
	// ProviderRevision.
	revs := &pkgv1.ProviderRevisionList{}
	if err := kube.List(ctx, revs, client.MatchingLabels{pkgv1.LabelParentPackage: xplocal.ProviderPackage}); err != nil || len(revs.Items) != 1 {
		t.Fatalf("provider revisions: %d, %v", len(revs.Items), err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := kube.Get(ctx, client.ObjectKey{Name: "clusterproviderconfigs.tencentcloud.crossplane.io"}, crd); err != nil {
		t.Fatal(err)
	}
	if !ownedBy(crd.OwnerReferences, revs.Items[0].UID) {
		t.Errorf("ClusterProviderConfig CRD owners %+v, want the provider revision %s", crd.OwnerReferences, revs.Items[0].Name)
	}
	t.Logf("installed %s (revision %s, image %s)", xplocal.ProviderPackage, revs.Items[0].Name, revs.Items[0].Spec.Package)
}

func activate(t *testing.T) {
	ctx := context.Background()
	// Crossplane made a ManagedResourceDefinition of every provider kind
	// but the configs; with safe-start they stay inactive and their CRDs
	// absent, and the provider runs regardless (its Healthy held above).
	mrd := &xpextv1alpha1.ManagedResourceDefinition{}
	if err := kube.Get(ctx, client.ObjectKey{Name: "loadbalancers.clb.tencentcloud.m.crossplane.io"}, mrd); err != nil {
		t.Fatal(err)
	}
	if mrd.Spec.State != xpextv1alpha1.ManagedResourceDefinitionInactive {
		t.Errorf("MRD state %q before any activation policy, want Inactive", mrd.Spec.State)
	}
	if err := kube.Get(ctx, client.ObjectKey{Name: mrd.Name}, &apiextensionsv1.CustomResourceDefinition{}); !kerrors.IsNotFound(err) {
		t.Errorf("the LoadBalancer CRD exists before activation (%v)", err)
	}

	activated, err := local.Activate(ctx, wait, "tencentcloud-network",
		"*.clb.tencentcloud.m.crossplane.io", "*.network.tencentcloud.m.crossplane.io")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"loadbalancers.clb.tencentcloud.m.crossplane.io", "portpools.clb.tencentcloud.m.crossplane.io",
		"podaddresses.network.tencentcloud.m.crossplane.io", "podaddresspolicies.network.tencentcloud.m.crossplane.io",
	} {
		if !slices.Contains(activated, name) {
			t.Errorf("CRD %s not activated (activated: %v)", name, activated)
		}
	}

	if err := suite.ProviderConfig(ctx); err != nil {
		t.Fatal(err)
	}
}

func claimWithExisting(t *testing.T) {
	ctx := context.Background()
	ns := "examples"
	suite.Namespace(t, ns)
	region := "ap-guangzhou"
	a, b := suite.ExistingLB(t, region, "rooms-a"), suite.ExistingLB(t, region, "rooms-b")
	claim := example(t, "composition/podpublicaddress-claim.yaml", "lb-rooms01", a, "lb-rooms02", b)
	if err := kube.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		pod(t, ns, fmt.Sprintf("rooms-%d", i), fmt.Sprintf("10.1.0.%d", 10+i), map[string]string{"app": "rooms"},
			corev1.ContainerPort{Name: "game", ContainerPort: 7000, Protocol: corev1.ProtocolTCP},
			corev1.ContainerPort{Name: "game-udp", ContainerPort: 7000, Protocol: corev1.ProtocolUDP})
	}
	var c *unstructured.Unstructured
	eventually(t, "claim reports 3 bound Pods and the VIPs", func() error {
		var err error
		if c, err = get(claimPPA, ns, "rooms"); err != nil {
			return err
		}
		vips, _, _ := unstructured.NestedStringSlice(c.Object, "status", "vips")
		if n := int64At(c, "status", "boundPods"); n != 3 || len(vips) != 2 {
			s, why := condition(c, "Ready")
			return fmt.Errorf("boundPods %d, vips %v, Ready=%s %s", n, vips, s, why)
		}
		return nil
	})
	for i := range 3 {
		pa := &networkv1alpha1.PodAddress{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("rooms-%d", i)}, pa); err != nil {
			t.Fatal(err)
		}
		// Ordinal strategy: Pod N has port 40000+N on both protocols.
		if pa.Status.State != networkv1alpha1.StateBound || len(pa.Status.Bindings) != 1 || pa.Status.Bindings[0].Port != int32(40000+i) {
			t.Errorf("rooms-%d: %s %+v", i, pa.Status.State, pa.Status.Bindings)
		}
	}
	healthOfComposite(t, waitReady(t, claimPPA, ns, "rooms"))

	// Another port on the claim reaches the policy and every Pod.
	eventually(t, "add a port to the claim", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		ports, _, _ := unstructured.NestedSlice(c.Object, "spec", "ports")
		ports = append(ports, map[string]any{"port": int64(7000), "protocol": "TCP", "addressAnnotation": "rooms.example.com/tcp"})
		if err := unstructured.SetNestedSlice(c.Object, ports, "spec", "ports"); err != nil {
			return err
		}
		return kube.Update(ctx, c)
	})
	eventually(t, "every Pod bound on the new port with its annotation", func() error {
		for i := range 3 {
			p := &corev1.Pod{}
			if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("rooms-%d", i)}, p); err != nil {
				return err
			}
			if p.Annotations["rooms.example.com/tcp"] == "" {
				return fmt.Errorf("rooms-%d has no address annotation: %v", i, p.Annotations)
			}
		}
		return nil
	})

	deleteComposite(t, claimPPA, ns, "rooms")
	for _, id := range []string{a, b} {
		lb, ok := suite.InventoryLB(id)
		if !ok {
			t.Errorf("existing load balancer %s was deleted", id)
			continue
		}
		if len(lb.Listeners) != 0 {
			t.Errorf("existing load balancer %s keeps %d listeners of the deleted pool", id, len(lb.Listeners))
		}
	}
}

func compositeWithTemplate(t *testing.T) {
	ctx := context.Background()
	ns := "examples"
	before := len(cloud.Inventory().LoadBalancers)
	xr := example(t, "composition/podpublicaddress.yaml")
	if err := kube.Create(ctx, xr); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		pod(t, ns, fmt.Sprintf("battle-%d", i), fmt.Sprintf("10.1.1.%d", 10+i), map[string]string{"app": "battle"},
			corev1.ContainerPort{Name: "game", ContainerPort: 9000, Protocol: corev1.ProtocolTCP},
			corev1.ContainerPort{Name: "voice", ContainerPort: 9001, Protocol: corev1.ProtocolUDP})
	}
	eventually(t, "composite reports 2 bound Pods", func() error {
		u, err := get(xrPPA, ns, "battle")
		if err != nil {
			return err
		}
		if n := int64At(u, "status", "boundPods"); n != 2 {
			s, why := condition(u, "Ready")
			return fmt.Errorf("boundPods %d, Ready=%s %s", n, s, why)
		}
		return nil
	})
	healthOfComposite(t, waitReady(t, xrPPA, ns, "battle"))
	if got := len(cloud.Inventory().LoadBalancers) - before; got < 2 {
		t.Errorf("%d load balancers created from the template, want at least 2", got)
	}
	p := &corev1.Pod{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "battle-0"}, p); err != nil {
		t.Fatal(err)
	}
	if a := p.Annotations["game.example.com/address"]; !strings.Contains(a, ":") {
		t.Errorf("address annotation %q", a)
	}
	deleteComposite(t, xrPPA, ns, "battle")
	if n := len(cloud.Inventory().LoadBalancers); n != before {
		t.Errorf("%d load balancers in the cloud after deleting the composite, want %d", n, before)
	}
}

func dedicatedCLBService(t *testing.T) {
	ctx := context.Background()
	ns := "demo"
	suite.Namespace(t, ns)
	region := "ap-chengdu"
	x, y, z := suite.ExistingLB(t, region, "gs-x"), suite.ExistingLB(t, region, "gs-y"), suite.ExistingLB(t, region, "gs-z")
	d := example(t, "composition/dedicatedclbservice.yaml", "lb-xxx", x, "lb-yyy", y, "lb-zzz", z)
	if err := kube.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	pod(t, ns, "gameserver-0", "10.1.2.10", map[string]string{"app": "gameserver"},
		corev1.ContainerPort{ContainerPort: 9000, Protocol: corev1.ProtocolTCP},
		corev1.ContainerPort{ContainerPort: 8000, Protocol: corev1.ProtocolUDP})
	eventually(t, "the Pod carries both addresses on the annotations it named", func() error {
		p := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gameserver-0"}, p); err != nil {
			return err
		}
		for _, k := range []string{"networking.cloud.tencent.com/external-address-9000", "networking.cloud.tencent.com/external-address-8080"} {
			if p.Annotations[k] == "" {
				return fmt.Errorf("no %s: %v", k, p.Annotations)
			}
		}
		return nil
	})
	healthOfComposite(t, waitReady(t, xrDedicated, ns, "gameserver"))
	deleteComposite(t, xrDedicated, ns, "gameserver")
	for _, id := range []string{x, y, z} {
		if lb, ok := suite.InventoryLB(id); !ok || len(lb.Listeners) != 0 {
			t.Errorf("existing load balancer %s: present %v, %d listeners left", id, ok, len(lb.Listeners))
		}
	}
}

// deleteComposite deletes a claim or composite and then, since the local
// control plane runs no garbage collector, what it composed, as the
// collector would, and waits until all of it is gone.
func deleteComposite(t *testing.T, gvk schema.GroupVersionKind, ns, name string) {
	t.Helper()
	if _, err := local.DeleteComposite(context.Background(), gvk, ns, name, wait); err != nil {
		t.Fatal(err)
	}
}

// compositeOf returns the composite of a claim, or u itself for a
// composite.
func compositeOf(t testing.TB, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	xr, err := local.Composite(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	return xr
}

func gone(u *unstructured.Unstructured) error {
	err := kube.Get(context.Background(), client.ObjectKeyFromObject(u), u.DeepCopy())
	switch {
	case kerrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("%s %s still there", u.GetKind(), u.GetName())
}

func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}
