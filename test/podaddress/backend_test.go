package podaddress

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

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
	pol := &v1alpha1.PodAddressPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "np"}}
	pol.Spec.Selector.MatchLabels = map[string]string{"app": "battle"}
	pol.Spec.Backend = v1alpha1.BackendNodePort
	pol.Spec.Ports = []v1alpha1.PortRequest{{Port: intstr.FromInt32(7777), Pools: []v1alpha1.PoolRef{{Name: "pool"}}, NodePort: &nodePort}}
	if err := kube.Create(context.Background(), pol); err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "np-0", Labels: map[string]string{"app": "battle"}}}
	p.Spec.NodeName = node.Name
	p.Spec.Containers = []corev1.Container{{Name: "s", Image: "example/server", Ports: []corev1.ContainerPort{{ContainerPort: 7777}}}}
	if err := kube.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	setIP(t, p, "10.31.0.1")
	b := bound(t, ns, "np-0").Status.Bindings[0]
	if b.InstanceID != "ins-abcd1234" || b.TargetPort != nodePort {
		t.Errorf("binding targets %s:%d, want ins-abcd1234:%d", b.InstanceID, b.TargetPort, nodePort)
	}
	li, _ := listener(lbID(l), b.ListenerIDs["TCP"])
	if len(li.Targets) != 1 || li.Targets[0].InstanceID != "ins-abcd1234" || li.Targets[0].Port != int(nodePort) {
		t.Errorf("cloud targets %+v, want the instance ins-abcd1234 on port %d", li.Targets, nodePort)
	}
}
