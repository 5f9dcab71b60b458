package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	vpcv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/vpc/v1alpha1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/deployed"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/node"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpcluster"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal"
)

// TestDeploymentRuntime: Crossplane ran our packages as Deployments: the
// provider's two replicas (examples/provider/runtimeconfig.yaml) and the
// function are Ready on the node, from their package images in the node's
// registry, as the non-root user of the image, and the Pod admission
// webhook goes to the provider through the Service Crossplane made.
func TestDeploymentRuntime(t *testing.T) {
	ctx := context.Background()
	for label, want := range map[string]int{
		"pkg.crossplane.io/provider=" + xplocal.ProviderPackage: 2,
		"pkg.crossplane.io/function=" + xplocal.FunctionPackage: 1,
	} {
		k, v, _ := strings.Cut(label, "=")
		eventually(t, label+" Pods Ready", func() error {
			pods, err := deployed.PodsOf(ctx, kube, xpcluster.Namespace, k, v)
			if err != nil {
				return err
			}
			ready := 0
			for _, p := range pods {
				if p.Spec.NodeName != node.Name || !strings.HasPrefix(p.Spec.Containers[0].Image, cluster.Node.Registry()+"/") {
					return fmt.Errorf("%s on node %q from image %s", p.Name, p.Spec.NodeName, p.Spec.Containers[0].Image)
				}
				if isReady(&p) {
					ready++
				}
			}
			if ready != want {
				return fmt.Errorf("%d of %d Pods Ready (%d listed)", ready, want, len(pods))
			}
			return nil
		})
		pods, _ := deployed.PodsOf(ctx, kube, xpcluster.Namespace, k, v)
		for _, p := range pods {
			t.Logf("%s: image %s on node %s, Pod IP %s", p.Name, p.Spec.Containers[0].Image, p.Spec.NodeName, p.Status.PodIP)
		}
	}

	var hooks admissionv1.MutatingWebhookConfigurationList
	if err := kube.List(ctx, &hooks); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, h := range hooks.Items {
		for _, w := range h.Webhooks {
			if w.ClientConfig.Service != nil && strings.Contains(w.ClientConfig.Service.Name, xplocal.ProviderPackage) && len(w.ClientConfig.CABundle) > 0 {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no mutating webhook goes to the provider's Service with a CA bundle: %+v", hooks.Items)
	}
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestSafeStartActivation: the product runs with examples/provider's
// activation policy, which leaves the EIP kind inactive (no CRD). A policy
// activating it later makes Crossplane install the CRD, and the running
// provider Pods, not restarted, serve it: an Address gets its EIP and
// releases it when deleted.
func TestSafeStartActivation(t *testing.T) {
	ctx := context.Background()
	const crdName = "addresses.vpc.tencentcloud.m.crossplane.io"
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := kube.Get(ctx, client.ObjectKey{Name: crdName}, crd); !kerrors.IsNotFound(err) {
		t.Fatalf("CRD %s before its kind is activated: %v, want not found", crdName, err)
	}
	mrd := &unstructured.Unstructured{}
	mrd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.crossplane.io", Version: "v1alpha1", Kind: "ManagedResourceDefinition"})
	if err := kube.Get(ctx, client.ObjectKey{Name: crdName}, mrd); err != nil {
		t.Fatal(err)
	}
	if state, _, _ := unstructured.NestedString(mrd.Object, "spec", "state"); state != "Inactive" {
		t.Fatalf("ManagedResourceDefinition %s: state %q, want Inactive", crdName, state)
	}
	restarts := providerRestarts(t)

	began := time.Now()
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.crossplane.io/v1alpha1",
		"kind":       "ManagedResourceActivationPolicy",
		"metadata":   map[string]any{"name": "eips"},
		"spec":       map[string]any{"activate": []any{"*.vpc.tencentcloud.m.crossplane.io"}},
	}}
	if err := kube.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the EIP kind's CRD established", func() error {
		if err := kube.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
			return err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", crd.Status.Conditions)
	})
	ensureNamespace(t, "eips")
	eip := &vpcv1alpha1.Address{ObjectMeta: metav1.ObjectMeta{Namespace: "eips", Name: "relay"}}
	eip.Spec.ForProvider.Bandwidth = ptr.To[int64](10)
	eventually(t, "create an Address", func() error { return kube.Create(ctx, eip) })
	eventually(t, "the Address Ready with its EIP", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(eip), eip); err != nil {
			return err
		}
		if c := eip.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue || eip.Status.AtProvider.PublicIP == "" {
			return fmt.Errorf("Ready %s %s, Synced %q, public IP %q", c.Status, c.Reason, eip.GetCondition(xpv2.TypeSynced).Message, eip.Status.AtProvider.PublicIP)
		}
		return nil
	})
	t.Logf("EIP kind activated and %s (%s) allocated by the running provider in %s", eip.Status.AtProvider.AddressID, eip.Status.AtProvider.PublicIP, time.Since(began).Round(time.Millisecond))
	if got := providerRestarts(t); !maps.Equal(got, restarts) {
		t.Errorf("provider Pods and restarts %v after the activation, were %v", got, restarts)
	}

	if err := kube.Delete(ctx, eip); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the EIP released", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(eip), eip); !kerrors.IsNotFound(err) {
			return fmt.Errorf("Address still there (%w)", err)
		}
		if n := len(cluster.Cloud.Inventory().EIPs); n != 0 {
			return fmt.Errorf("%d EIPs in the cloud", n)
		}
		return nil
	})
}

// providerRestarts maps each provider Pod to its container's restarts.
func providerRestarts(t *testing.T) map[string]int32 {
	t.Helper()
	pods, err := deployed.PodsOf(context.Background(), kube, xpcluster.Namespace, "pkg.crossplane.io/provider", xplocal.ProviderPackage)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, p := range pods {
		for _, c := range p.Status.ContainerStatuses {
			out[p.Name] += c.RestartCount
		}
	}
	return out
}
