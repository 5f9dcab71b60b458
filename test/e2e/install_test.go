package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/deployed"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/node"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/xpcluster"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/xplocal"
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
