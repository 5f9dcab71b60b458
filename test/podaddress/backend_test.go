package podaddress

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// TestHostPortBackend binds the node and the container's hostPort, as the
// bcs "<port>/hostport" form asks.
func TestHostPortBackend(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool", []string{"lb"}, 41000, 41004)
	pod(t, ns, "hp", "10.30.0.1", map[string]string{bcsEnabled: "true", bcsPorts: "pool TCP 7777/hostport"},
		corev1.ContainerPort{ContainerPort: 7777, HostPort: 17777, Protocol: corev1.ProtocolTCP})
	b := bound(t, ns, "hp").Status.Bindings[0]
	// setIP puts every test Pod on the node 10.0.0.1.
	if got := cloudTargets(lbID(l), b.ListenerIDs["TCP"]); !slices.Equal(got, []string{"10.0.0.1:17777"}) {
		t.Errorf("targets %v, want the node's IP and the hostPort 10.0.0.1:17777", got)
	}
}

// TestNodePortBackend binds the node's CVM instance (from its providerID)
// and a NodePort, through a PodAddressPolicy.
func TestNodePortBackend(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool", []string{"lb"}, 42000, 42004)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + ns}, Spec: corev1.NodeSpec{ProviderID: "qcloud:///800002/ins-abcd1234"}}
	if err := kube.Create(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	nodePort := int32(30777)
	// The node port is the Pod's own Service's.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "battle"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "battle"},
		Ports: []corev1.ServicePort{{Port: 7777, TargetPort: intstr.FromInt32(7777), NodePort: nodePort}},
	}}
	if err := kube.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	for name, port := range map[string]int32{"np": nodePort, "np-ssh": 22} {
		pol := &v1alpha1.PodAddressPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		pol.Spec.Selector.MatchLabels = map[string]string{"app": "battle", "policy": name}
		pol.Spec.Backend = v1alpha1.BackendNodePort
		pol.Spec.Ports = []v1alpha1.PortRequest{{Port: intstr.FromInt32(7777), Pools: []v1alpha1.PoolRef{{Name: "pool"}}, NodePort: &port}}
		if err := kube.Create(context.Background(), pol); err != nil {
			t.Fatal(err)
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-0", Labels: map[string]string{"app": "battle", "policy": name}}}
		p.Spec.NodeName = node.Name
		p.Spec.Containers = []corev1.Container{{Name: "s", Image: "example/server", Ports: []corev1.ContainerPort{{ContainerPort: 7777}}}}
		if err := kube.Create(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		setIP(t, p, "10.31.0.1")
	}
	// Node port 22 is no Service's: nothing is registered for it.
	eventually(t, "np-ssh-0 refused the node's port 22", func() error {
		pa := &v1alpha1.PodAddress{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "np-ssh-0"}, pa); err != nil {
			return err
		}
		if pa.Status.State != v1alpha1.StateWaitBackend || !strings.Contains(pa.Status.Message, "no Service of namespace "+ns+" selecting np-ssh-0 has node port 22") {
			return errors.Errorf("state %s: %s", pa.Status.State, pa.Status.Message)
		}
		for _, b := range pa.Status.Bindings {
			if b.TargetPort != 0 {
				return errors.Errorf("a target was recorded: %+v", b)
			}
		}
		return nil
	})
	b := bound(t, ns, "np-0").Status.Bindings[0]
	if b.InstanceID != "ins-abcd1234" || b.TargetPort != nodePort {
		t.Errorf("binding targets %s:%d, want ins-abcd1234:%d", b.InstanceID, b.TargetPort, nodePort)
	}
	li, _ := listener(lbID(l), b.ListenerIDs["TCP"])
	if len(li.Targets) != 1 || li.Targets[0].InstanceID != "ins-abcd1234" || li.Targets[0].Port != int(nodePort) {
		t.Errorf("cloud targets %+v, want the instance ins-abcd1234 on port %d", li.Targets, nodePort)
	}
}

// TestHostPortOnePort: "<port>/hostport" marks that port only. Of two
// ports of one Pod, the /hostport one targets the node and its hostPort,
// the other the Pod IP and its container port.
func TestHostPortOnePort(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool", []string{"lb"}, 44000, 44004)
	pod(t, ns, "mixed", "10.44.0.1", map[string]string{bcsEnabled: "true", bcsPorts: "pool TCP 7777/hostport;pool TCP 8888"},
		corev1.ContainerPort{ContainerPort: 7777, HostPort: 17777, Protocol: corev1.ProtocolTCP},
		corev1.ContainerPort{ContainerPort: 8888, Protocol: corev1.ProtocolTCP})
	pa := bound(t, ns, "mixed")
	if len(pa.Status.Bindings) != 2 {
		t.Fatalf("bindings %+v, want two", pa.Status.Bindings)
	}
	// setIP puts every test Pod on the node 10.0.0.1.
	want := map[int32]string{7777: "10.0.0.1:17777", 8888: "10.44.0.1:8888"}
	for _, b := range pa.Status.Bindings {
		if got := cloudTargets(lbID(l), b.ListenerIDs["TCP"]); !slices.Equal(got, []string{want[b.ContainerPort]}) {
			t.Errorf("port %d: targets %v, want [%s]", b.ContainerPort, got, want[b.ContainerPort])
		}
	}
	for _, pr := range pa.Spec.Ports {
		wantBackend := ""
		if pr.Port.IntValue() == 7777 {
			wantBackend = v1alpha1.BackendHostPort
		}
		if pr.Backend != wantBackend {
			t.Errorf("port %s: backend %q, want %q", pr.Port.String(), pr.Backend, wantBackend)
		}
	}
	if pa.Spec.Backend != v1alpha1.BackendPodIP {
		t.Errorf("the PodAddress's backend is %q, want PodIP", pa.Spec.Backend)
	}
}

// TestBackendWithoutPort: a HostPort backend whose container port has no
// hostPort, and a NodePort backend with no nodePort, are refused (Invalid,
// a message, a warning on the Pod) before a port is taken, never bound to
// the node's container port.
func TestBackendWithoutPort(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool", []string{"lb"}, 45000, 45004)

	pod(t, ns, "nohost", "10.45.0.1", map[string]string{bcsEnabled: "true", bcsPorts: "pool TCP 7777/hostport"})
	pa := state(t, ns, "nohost", v1alpha1.StateInvalid)
	if !strings.Contains(pa.Status.Message, "HostPort backend") || !strings.Contains(pa.Status.Message, "hostPort") {
		t.Errorf("message %q does not say the hostPort is missing", pa.Status.Message)
	}
	podWarning(t, ns, "nohost", "InvalidAddressRequest", "hostPort")

	pol := &v1alpha1.PodAddressPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "np"}}
	pol.Spec.Selector.MatchLabels = map[string]string{"app": "np"}
	pol.Spec.Backend = v1alpha1.BackendNodePort
	pol.Spec.Ports = []v1alpha1.PortRequest{{Port: intstr.FromInt32(7777), Pools: []v1alpha1.PoolRef{{Name: "pool"}}}}
	if err := kube.Create(context.Background(), pol); err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nonode", Labels: map[string]string{"app": "np"}}}
	p.Spec.Containers = []corev1.Container{{Name: "s", Image: "example/server", Ports: []corev1.ContainerPort{{ContainerPort: 7777}}}}
	if err := kube.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	setIP(t, p, "10.45.0.2")
	pa = state(t, ns, "nonode", v1alpha1.StateInvalid)
	if !strings.Contains(pa.Status.Message, "NodePort backend") || !strings.Contains(pa.Status.Message, "nodePort") {
		t.Errorf("message %q does not say the nodePort is missing", pa.Status.Message)
	}
	podWarning(t, ns, "nonode", "InvalidAddressRequest", "nodePort")

	for _, name := range []string{"nohost", "nonode"} {
		pa := &v1alpha1.PodAddress{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pa); err != nil {
			t.Fatal(err)
		}
		if len(pa.Status.Bindings) != 0 {
			t.Errorf("%s holds bindings %+v", name, pa.Status.Bindings)
		}
	}
	lbs, _ := cloud.Inventory().LoadBalancer(lbID(l))
	for _, li := range lbs.Listeners {
		if len(li.Targets) != 0 {
			t.Errorf("listener %d has targets %+v", li.Port, li.Targets)
		}
	}
}

// podWarning waits for a warning Event on the Pod with reason whose
// message contains text.
func podWarning(t *testing.T, ns, podName, reason, text string) {
	t.Helper()
	eventually(t, "a "+reason+" warning on "+podName, func() error {
		l := &corev1.EventList{}
		if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range l.Items {
			if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == podName && e.Type == corev1.EventTypeWarning &&
				e.Reason == reason && strings.Contains(e.Message, text) {
				return nil
			}
		}
		return errors.Errorf("none among %d events", len(l.Items))
	})
}
