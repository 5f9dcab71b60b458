package tkehostport

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

func node() *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.0.7"}}
	return n
}

// running is a Pod on worker-1 holding hostPort 7106/UDP, as the kubelet
// reports it once it runs.
func running() *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "game", Name: "gs-0",
		Annotations: map[string]string{podannotation.TKEAnnotationEnableHostPortMapping: "true"}}}
	p.Spec.NodeName = "worker-1"
	p.Spec.Containers = []corev1.Container{{Name: "gs", Ports: []corev1.ContainerPort{{ContainerPort: 7654, HostPort: 7106, Protocol: corev1.ProtocolUDP}}}}
	p.Status.Phase, p.Status.HostIP = corev1.PodRunning, "10.1.0.7"
	return p
}

// bound is the Node's PodAddress, Bound: public 31001-32001 to node ports
// 7000-8000, UDP.
func bound() *v1alpha1.PodAddress {
	pa := &v1alpha1.PodAddress{}
	pa.Status.State = v1alpha1.StateBound
	pa.Status.Bindings = []v1alpha1.PortBinding{{Pool: "tke-port-pools/pool-test2", Protocol: "UDP", ContainerPort: 7000,
		LoadBalancerID: "lb-1", VIPs: []string{"1.1.1.1"}, Port: 31001, EndPort: 32001, ListenerIDs: map[string]string{"UDP": "lbl-u"}}}
	return pa
}

func TestTell(t *testing.T) {
	cases := map[string]struct {
		reason string
		pod    func(*corev1.Pod)
		node   *corev1.Node
		pa     *v1alpha1.PodAddress
		// address is the one entry's address; "" for nothing told.
		address string
		// why is part of the Warning; "" for none.
		why string
	}{
		"Told": {
			reason:  "a running Pod is told its hostPort's public port on its node's segment",
			node:    node(),
			pa:      bound(),
			address: "1.1.1.1:31107",
		},
		"NotRunning": {
			reason: "a Pod the kubelet has not run (or refused: its hostPort taken) holds nothing on the node",
			pod:    func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending },
			node:   node(),
			pa:     bound(),
		},
		"Failed": {
			reason: "a Pod the kubelet refused (OutOfhostPort) is never told",
			pod:    func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed },
			node:   node(),
			pa:     bound(),
		},
		"OtherHostIP": {
			reason: "a Pod whose host IP is not its node's is not told: it does not run there",
			pod:    func(p *corev1.Pod) { p.Status.HostIP = "10.1.0.8" },
			node:   node(),
			pa:     bound(),
			why:    "is not an address of its node worker-1",
		},
		"NodeGone": {
			reason: "no node, nothing to tell",
			pa:     bound(),
		},
		"NodeWithoutListeners": {
			reason: "the node asks for nothing: tke-extend's NoClbBoundNode",
			node:   node(),
			why:    "node worker-1 has no CLB listeners",
		},
		"NodeAsksNotMadeYet": {
			reason: "the node asks, its PodAddress not made yet (or its pool in a dry run of the switch): wait, say nothing",
			node: func() *corev1.Node {
				n := node()
				n.Annotations = map[string]string{podannotation.TKEAnnotationEnableMapping: "true", podannotation.TKEAnnotationPortMapping: "7000 UDP pool-test"}
				return n
			}(),
		},
		"NodeSwitchOff": {
			reason: "a node with port lines but its switch off asks for nothing",
			node: func() *corev1.Node {
				n := node()
				n.Annotations = map[string]string{podannotation.TKEAnnotationEnableMapping: "false", podannotation.TKEAnnotationPortMapping: "7000 UDP pool-test"}
				return n
			}(),
			why: "node worker-1 has no CLB listeners",
		},
		"NodeNotBound": {
			reason: "the node's listeners are being bound: wait, say nothing",
			node:   node(),
			pa: func() *v1alpha1.PodAddress {
				pa := bound()
				pa.Status.State = v1alpha1.StateAllocated
				return pa
			}(),
		},
		"HostPortOutside": {
			reason: "a hostPort outside the node's range has no address: tke-extend's NoPortAvailable",
			pod:    func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = 9000 },
			node:   node(),
			pa:     bound(),
			why:    "no hostPort of the Pod is within the listeners of node worker-1 (UDP 7000-8000)",
		},
		"NoHostPortDeclared": {
			reason: "only the hostPorts the Pod declares are told",
			pod:    func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = 0 },
			node:   node(),
			pa:     bound(),
			why:    "no hostPort of the Pod",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := running()
			if tc.pod != nil {
				tc.pod(p)
			}
			got, why := tell(p, tc.node, tc.pa)
			switch {
			case tc.why == "" && why != nil:
				t.Errorf("%s: unexpected Warning %v", tc.reason, why)
			case tc.why != "" && (why == nil || !strings.Contains(why.Error(), tc.why)):
				t.Errorf("%s: Warning %v, want one saying %q", tc.reason, why, tc.why)
			}
			if tc.address == "" {
				if got != nil {
					t.Errorf("%s: told %v, want nothing", tc.reason, got)
				}
				return
			}
			if got[podannotation.TKEAnnotationHostPortMappingStatus] != podannotation.StatusReady ||
				!strings.Contains(got[podannotation.TKEAnnotationHostPortMappingResult], `"loadbalancerPort":31107,"listenerId":"lbl-u","address":"`+tc.address+`"`) {
				t.Errorf("%s: told %v, want %s", tc.reason, got, tc.address)
			}
		})
	}
}
