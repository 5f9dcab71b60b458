package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/deployed"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestDedicatedCLBServiceExample applies tke-extend-network-controller's
// DedicatedCLBService example (examples/composition, only the load
// balancer ids replaced) to a StatefulSet of game servers on its ports:
// each Pod's annotations name its TCP and UDP addresses, which reach its
// container; the composite deleted by the garbage collector leaves the
// existing load balancers without a listener.
func TestDedicatedCLBServiceExample(t *testing.T) {
	ctx := context.Background()
	const ns, tcpPort, udpPort = "demo", 9000, 8000
	image := gameServer(t, ns)
	// The example's existing load balancers, made in its region.
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "composition", "dedicatedclbservice.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, placeholder := range []string{"lb-xxx", "lb-yyy", "lb-zzz"} {
		id := existingLB(t, "ap-chengdu", "dcs-"+placeholder)
		ids = append(ids, id)
		b = []byte(strings.ReplaceAll(string(b), placeholder, id))
	}
	xr := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &xr.Object); err != nil {
		t.Fatal(err)
	}
	if err := kube.Create(ctx, xr); err != nil {
		t.Fatal(err)
	}

	sts := deployed.GameStatefulSet(ns, "gameserver", image, 2)
	c := &sts.Spec.Template.Spec.Containers[0]
	c.Args = []string{"--tcp", strconv.Itoa(tcpPort), "--udp", strconv.Itoa(udpPort)}
	c.Ports = []corev1.ContainerPort{{ContainerPort: tcpPort, Protocol: corev1.ProtocolTCP}, {ContainerPort: udpPort, Protocol: corev1.ProtocolUDP}}
	// The example gives no readiness gate; the Pods are Ready when they run.
	sts.Spec.Template.Spec.ReadinessGates = nil
	if err := kube.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for i := range 2 {
		name := "gameserver-" + strconv.Itoa(i)
		pod := &corev1.Pod{}
		eventually(t, name+" told its addresses", func() error {
			if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
				return err
			}
			for _, k := range []string{"networking.cloud.tencent.com/external-address-9000", "networking.cloud.tencent.com/external-address-8080"} {
				if pod.Annotations[k] == "" {
					return fmt.Errorf("no annotation %s yet", k)
				}
			}
			return nil
		})
		tcp := pod.Annotations["networking.cloud.tencent.com/external-address-9000"]
		udp := pod.Annotations["networking.cloud.tencent.com/external-address-8080"]
		for network, addr := range map[string]string{"tcp": tcp, "udp": udp} {
			got, err := deployed.Ask(ctx, network, addr, wait)
			if err != nil || got != name {
				t.Fatalf("%s through %s: answered by %q (%v), want %s", network, addr, got, err, name)
			}
		}
		t.Logf("%s (Pod IP %s): TCP %s and UDP %s answer", name, pod.Status.PodIP, tcp, udp)
	}
	t.Logf("2 Pods reachable through their annotated addresses %s after the StatefulSet was created", time.Since(began).Round(time.Millisecond))

	began = time.Now()
	if err := kube.Delete(ctx, sts); err != nil {
		t.Fatal(err)
	}
	if err := kube.Delete(ctx, xr); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the existing load balancers kept, without listeners", func() error {
		for _, id := range ids {
			lb, ok := cluster.Cloud.Inventory().LoadBalancer(id)
			if !ok {
				return fmt.Errorf("existing load balancer %s deleted", id)
			}
			if len(lb.Listeners) != 0 {
				return fmt.Errorf("%s keeps %d listeners", id, len(lb.Listeners))
			}
		}
		return nil
	})
	t.Logf("StatefulSet and DedicatedCLBService deleted, the load balancers emptied in %s", time.Since(began).Round(time.Millisecond))
	deleteLBs(t, "ap-chengdu", ids)
}

// TestIngressDirectToPods runs bcs-ingress-controller's scenario 2 (CLB
// straight to a Service's Pods, test/render/testdata/ingress) on a
// Deployment of game servers: the Service's endpoints come from the real
// EndpointSlice controller, both Pods answer through the listener, and a
// scale-down leaves only the remaining Pod behind it.
func TestIngressDirectToPods(t *testing.T) {
	ctx := context.Background()
	const ns, servicePort = "web", 28080
	image := gameServer(t, ns)
	lb := existingLB(t, "ap-guangzhou", "ingress-s2")

	sts := deployed.GameStatefulSet(ns, "test-svc", image, 2)
	sts.Spec.Template.Spec.ReadinessGates = nil
	if err := kube.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test-svc"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "test-svc"},
		Ports:    []corev1.ServicePort{{Port: servicePort, TargetPort: intstr.FromInt32(deployed.GamePort), Protocol: corev1.ProtocolTCP}},
	}}
	if err := kube.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "test", "render", "testdata", "ingress", "s2-direct.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(strings.NewReplacer("lb-xxxxxxx", lb, "default", ns).Replace(string(b))), &in.Object); err != nil {
		t.Fatal(err)
	}
	if err := kube.Create(ctx, in); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var addr string
	eventually(t, "the listener's address in the Ingress's status", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(in), in); err != nil {
			return err
		}
		rules, _, _ := unstructured.NestedSlice(in.Object, "status", "rules")
		if len(rules) != 1 {
			return fmt.Errorf("status rules %v", rules)
		}
		ls, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "listeners") //nolint:forcetypeassert // the status's shape
		if len(ls) != 1 {
			return fmt.Errorf("rule listeners %v", ls)
		}
		as, _, _ := unstructured.NestedStringSlice(ls[0].(map[string]any), "addresses") //nolint:forcetypeassert // the status's shape
		if len(as) != 1 {
			return fmt.Errorf("listener %v", ls[0])
		}
		addr = as[0]
		return nil
	})
	seen := map[string]bool{}
	eventually(t, "both Pods answer through "+addr, func() error {
		got, err := deployed.Ask(ctx, "tcp", addr, time.Second)
		if err != nil {
			return err
		}
		seen[got] = true
		if !seen["test-svc-0"] || !seen["test-svc-1"] {
			return fmt.Errorf("answered so far: %v", seen)
		}
		return nil
	})
	t.Logf("both Pods answer through %s, %s after the Ingress was created", addr, time.Since(began).Round(time.Millisecond))

	// Scaled down: the EndpointSlice controller drops test-svc-1 and its
	// target leaves; every connection reaches test-svc-0.
	began = time.Now()
	if err := kube.Get(ctx, client.ObjectKeyFromObject(sts), sts); err != nil {
		t.Fatal(err)
	}
	sts.Spec.Replicas = ptr.To[int32](1)
	if err := kube.Update(ctx, sts); err != nil {
		t.Fatal(err)
	}
	eventually(t, "one target left", func() error {
		l, _ := cluster.Cloud.Inventory().LoadBalancer(lb)
		if len(l.Listeners) != 1 || len(l.Listeners[0].Targets) != 1 {
			return fmt.Errorf("listeners %+v", l.Listeners)
		}
		return nil
	})
	eventually(t, "every round trip reaches test-svc-0", func() error {
		for range 4 {
			got, err := deployed.Ask(ctx, "tcp", addr, time.Second)
			if err != nil {
				return err
			}
			if got != "test-svc-0" {
				return fmt.Errorf("answered by %q", got)
			}
		}
		return nil
	})
	t.Logf("scaled to 1: only test-svc-0 behind %s after %s", addr, time.Since(began).Round(time.Millisecond))

	for _, o := range []client.Object{in, svc, sts} {
		if err := kube.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the load balancer kept, without listeners", func() error {
		l, ok := cluster.Cloud.Inventory().LoadBalancer(lb)
		if !ok {
			return errors.New("the existing load balancer was deleted")
		}
		if len(l.Listeners) != 0 {
			return fmt.Errorf("%d listeners left", len(l.Listeners))
		}
		return nil
	})
	deleteLBs(t, "ap-guangzhou", []string{lb})
}

// gameServer pushes cmd/gameserver's image to the node's registry, makes
// namespace ns, and returns the image.
func gameServer(t *testing.T, ns string) string {
	t.Helper()
	image, err := cluster.PushGameServer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ensureNamespace(t, ns)
	return image
}

func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	if err := kube.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// existingLB creates a load balancer in the cloud, as one a user already
// has, and returns its id once it is up.
func existingLB(t *testing.T, region, name string) string {
	t.Helper()
	return emulatortest.ExistingLB(t, cluster.Cloud, region, name, wait)
}

// deleteLBs deletes the load balancers existingLB made, leaving the cloud
// empty for the tests after.
func deleteLBs(t *testing.T, region string, ids []string) {
	t.Helper()
	c := emulatortest.NewSDKClient(t, cluster.Cloud.Endpoint(), emulator.DefaultSecretID, emulator.DefaultSecretKey, region)
	req := clbsdk.NewDeleteLoadBalancerRequest()
	for _, id := range ids {
		req.LoadBalancerIds = append(req.LoadBalancerIds, ptr.To(id))
	}
	eventually(t, "delete the existing load balancers", func() error {
		_, err := c.DeleteLoadBalancer(req)
		return err
	})
	eventually(t, "the existing load balancers gone", func() error {
		for _, id := range ids {
			if _, ok := cluster.Cloud.Inventory().LoadBalancer(id); ok {
				return fmt.Errorf("%s still there", id)
			}
		}
		return nil
	})
}
