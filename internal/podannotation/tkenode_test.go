package podannotation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

func TestTKENodeKeys(t *testing.T) {
	key := TKENodeAddressName("worker-1")
	if key != (types.NamespacedName{Namespace: TKEPoolNamespace, Name: "node.worker-1"}) {
		t.Fatalf("TKENodeAddressName: %v", key)
	}
	cases := map[string]struct {
		key  types.NamespacedName
		node string
		ok   bool
	}{
		"Node":           {key: key, node: "worker-1", ok: true},
		"OtherNamespace": {key: types.NamespacedName{Namespace: "game", Name: "node.worker-1"}},
		"NoPrefix":       {key: types.NamespacedName{Namespace: TKEPoolNamespace, Name: "worker-1"}},
		"EmptyNode":      {key: types.NamespacedName{Namespace: TKEPoolNamespace, Name: "node."}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			node, ok := TKENodeOf(tc.key)
			if node != tc.node || ok != tc.ok {
				t.Errorf("TKENodeOf(%v) = %q, %v; want %q, %v", tc.key, node, ok, tc.node, tc.ok)
			}
		})
	}
}

func TestTKENodeHostPorts(t *testing.T) {
	cases := map[string]struct {
		a    map[string]string
		want bool
	}{
		"Switch":       {a: map[string]string{TKEAnnotationEnableHostPortMapping: "true"}, want: true},
		"SwitchSpaced": {a: map[string]string{TKEAnnotationEnableHostPortMapping: " True "}, want: true},
		"SwitchFalse":  {a: map[string]string{TKEAnnotationEnableHostPortMapping: "false"}},
		"NodeSwitch":   {a: map[string]string{TKEAnnotationEnableMapping: "true", TKEAnnotationPortMapping: "7000 TCPUDP pool-a"}},
		// With lines the Pod's ports get slots of their own (parseTKE).
		"OwnLines": {a: map[string]string{TKEAnnotationEnableHostPortMapping: "true", TKEAnnotationHostPortMapping: "7654 UDP pool-a"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := TKENodeHostPorts(tc.a); got != tc.want {
				t.Errorf("TKENodeHostPorts: %v, want %v", got, tc.want)
			}
		})
	}
}

// nodeSegment is a Node's binding of "7000 TCPUDP pool-test2" on a pool of
// segmentLength 1001: public 31001-32001 to node ports 7000-8000.
func nodeSegment() v1alpha1.PortBinding {
	return v1alpha1.PortBinding{
		Pool: TKEPoolNamespace + "/pool-test2", Protocol: v1alpha1.ProtocolTCPUDP, ContainerPort: 7000, LoadBalancerID: "lb-e9bt8x65",
		Region: "ap-chengdu", VIPs: []string{"1.1.1.1"}, Port: 31001, EndPort: 32001,
		ListenerIDs: map[string]string{"TCP": "lbl-av86rekp", "UDP": "lbl-rvunrb65"},
	}
}

func hostPortPod(ports ...corev1.ContainerPort) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "gameserver", Ports: ports}}}}
}

func TestTKENodeHostPortResult(t *testing.T) {
	udp := corev1.ContainerPort{ContainerPort: 7654, HostPort: 7106, Protocol: corev1.ProtocolUDP}
	tcp := corev1.ContainerPort{ContainerPort: 7654, HostPort: 7157, Protocol: corev1.ProtocolTCP}
	cases := map[string]struct {
		reason string
		pod    *corev1.Pod
		node   []v1alpha1.PortBinding
		want   []TKEHostPortMapping
	}{
		"Segment": {
			reason: "tke-extend's documented example: each hostPort moved as far into the segment as it is from the node's first port",
			pod:    hostPortPod(udp, tcp),
			node:   []v1alpha1.PortBinding{nodeSegment()},
			want: []TKEHostPortMapping{
				{ContainerPort: 7654, HostPort: 7106, Protocol: "UDP", Pool: "pool-test2", Region: "ap-chengdu", LoadbalancerID: "lb-e9bt8x65",
					LoadbalancerPort: 31107, ListenerID: "lbl-rvunrb65", Address: "1.1.1.1:31107", IPs: []string{"1.1.1.1"}},
				{ContainerPort: 7654, HostPort: 7157, Protocol: "TCP", Pool: "pool-test2", Region: "ap-chengdu", LoadbalancerID: "lb-e9bt8x65",
					LoadbalancerPort: 31158, ListenerID: "lbl-av86rekp", Address: "1.1.1.1:31158", IPs: []string{"1.1.1.1"}},
			},
		},
		"Edges": {
			reason: "the first and last node ports of the segment are covered",
			pod:    hostPortPod(corev1.ContainerPort{ContainerPort: 1, HostPort: 7000, Protocol: corev1.ProtocolUDP}, corev1.ContainerPort{ContainerPort: 2, HostPort: 8000, Protocol: corev1.ProtocolUDP}),
			node:   []v1alpha1.PortBinding{nodeSegment()},
			want: []TKEHostPortMapping{
				{ContainerPort: 1, HostPort: 7000, Protocol: "UDP", Pool: "pool-test2", Region: "ap-chengdu", LoadbalancerID: "lb-e9bt8x65",
					LoadbalancerPort: 31001, ListenerID: "lbl-rvunrb65", Address: "1.1.1.1:31001", IPs: []string{"1.1.1.1"}},
				{ContainerPort: 2, HostPort: 8000, Protocol: "UDP", Pool: "pool-test2", Region: "ap-chengdu", LoadbalancerID: "lb-e9bt8x65",
					LoadbalancerPort: 32001, ListenerID: "lbl-rvunrb65", Address: "1.1.1.1:32001", IPs: []string{"1.1.1.1"}},
			},
		},
		"OutOfRange": {
			reason: "a hostPort below or above the node's range has no address",
			pod:    hostPortPod(corev1.ContainerPort{ContainerPort: 1, HostPort: 6999, Protocol: corev1.ProtocolUDP}, corev1.ContainerPort{ContainerPort: 2, HostPort: 8001, Protocol: corev1.ProtocolUDP}),
			node:   []v1alpha1.PortBinding{nodeSegment()},
			want:   []TKEHostPortMapping{},
		},
		"NoHostPort": {
			reason: "a container port without a hostPort is not held on the node",
			pod:    hostPortPod(corev1.ContainerPort{ContainerPort: 7100, Protocol: corev1.ProtocolUDP}),
			node:   []v1alpha1.PortBinding{nodeSegment()},
			want:   []TKEHostPortMapping{},
		},
		"OtherProtocol": {
			reason: "a UDP hostPort is not told a TCP-only listener",
			pod:    hostPortPod(udp),
			node: func() []v1alpha1.PortBinding {
				b := nodeSegment()
				b.Protocol, b.ListenerIDs = "TCP", map[string]string{"TCP": "lbl-av86rekp"}
				return []v1alpha1.PortBinding{b}
			}(),
			want: []TKEHostPortMapping{},
		},
		"OnePort": {
			reason: "a pool without segments: only the line's own port, unmoved",
			pod:    hostPortPod(udp, corev1.ContainerPort{ContainerPort: 7000, HostPort: 7000, Protocol: corev1.ProtocolUDP}),
			node: func() []v1alpha1.PortBinding {
				b := nodeSegment()
				b.Port, b.EndPort = 30005, 0
				return []v1alpha1.PortBinding{b}
			}(),
			want: []TKEHostPortMapping{{ContainerPort: 7000, HostPort: 7000, Protocol: "UDP", Pool: "pool-test2", Region: "ap-chengdu",
				LoadbalancerID: "lb-e9bt8x65", LoadbalancerPort: 30005, ListenerID: "lbl-rvunrb65", Address: "1.1.1.1:30005", IPs: []string{"1.1.1.1"}}},
		},
		"Hostname": {
			reason: "a domain-based load balancer is told by its name alone",
			pod:    hostPortPod(udp),
			node: func() []v1alpha1.PortBinding {
				b := nodeSegment()
				b.Hostname = "lb-e9bt8x65.clb.example"
				return []v1alpha1.PortBinding{b}
			}(),
			want: []TKEHostPortMapping{{ContainerPort: 7654, HostPort: 7106, Protocol: "UDP", Pool: "pool-test2", Region: "ap-chengdu",
				LoadbalancerID: "lb-e9bt8x65", LoadbalancerPort: 31107, ListenerID: "lbl-rvunrb65", Address: "lb-e9bt8x65.clb.example:31107",
				Hostname: "lb-e9bt8x65.clb.example"}},
		},
		"TwoPools": {
			reason: "one entry per pool whose listener covers the hostPort, in tke-extend's order",
			pod:    hostPortPod(udp),
			node: func() []v1alpha1.PortBinding {
				a, b := nodeSegment(), nodeSegment()
				b.Pool, b.LoadBalancerID = TKEPoolNamespace+"/pool-a", "lb-a"
				return []v1alpha1.PortBinding{a, b}
			}(),
			want: []TKEHostPortMapping{
				{ContainerPort: 7654, HostPort: 7106, Protocol: "UDP", Pool: "pool-a", Region: "ap-chengdu", LoadbalancerID: "lb-a",
					LoadbalancerPort: 31107, ListenerID: "lbl-rvunrb65", Address: "1.1.1.1:31107", IPs: []string{"1.1.1.1"}},
				{ContainerPort: 7654, HostPort: 7106, Protocol: "UDP", Pool: "pool-test2", Region: "ap-chengdu", LoadbalancerID: "lb-e9bt8x65",
					LoadbalancerPort: 31107, ListenerID: "lbl-rvunrb65", Address: "1.1.1.1:31107", IPs: []string{"1.1.1.1"}},
			},
		},
		"DeclaredOrder": {
			reason: "tke-extend lists the Pod's ports as declared: the example's UDP 7106 before its TCP 7106, not sorted by protocol",
			pod:    hostPortPod(udp, corev1.ContainerPort{ContainerPort: 7654, HostPort: 7106, Protocol: corev1.ProtocolTCP}),
			node:   []v1alpha1.PortBinding{nodeSegment()},
			want: []TKEHostPortMapping{
				{ContainerPort: 7654, HostPort: 7106, Protocol: "UDP", Pool: "pool-test2", Region: "ap-chengdu", LoadbalancerID: "lb-e9bt8x65",
					LoadbalancerPort: 31107, ListenerID: "lbl-rvunrb65", Address: "1.1.1.1:31107", IPs: []string{"1.1.1.1"}},
				{ContainerPort: 7654, HostPort: 7106, Protocol: "TCP", Pool: "pool-test2", Region: "ap-chengdu", LoadbalancerID: "lb-e9bt8x65",
					LoadbalancerPort: 31107, ListenerID: "lbl-av86rekp", Address: "1.1.1.1:31107", IPs: []string{"1.1.1.1"}},
			},
		},
		"NoListenerYet": {
			reason: "a binding without the protocol's listener id tells nothing",
			pod:    hostPortPod(udp),
			node: func() []v1alpha1.PortBinding {
				b := nodeSegment()
				b.ListenerIDs = map[string]string{"TCP": "lbl-av86rekp"}
				return []v1alpha1.PortBinding{b}
			}(),
			want: []TKEHostPortMapping{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := TKENodeHostPortResult(tc.pod, tc.node)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestTKENodeHostPortGolden checks the bytes of tke-extend's documented
// result for the same binding (its example with its own field values;
// tke-extend v2.5.2 always writes address, which its example leaves out).
func TestTKENodeHostPortGolden(t *testing.T) {
	b := nodeSegment()
	b.VIPs = nil
	got := TKENodeHostPortAnnotations(TKENodeHostPortResult(hostPortPod(corev1.ContainerPort{ContainerPort: 7654, HostPort: 7106, Protocol: corev1.ProtocolUDP}), []v1alpha1.PortBinding{b}))
	want := `[{"containerPort":7654,"hostPort":7106,"protocol":"UDP","pool":"pool-test2","region":"ap-chengdu","loadbalancerId":"lb-e9bt8x65","loadbalancerPort":31107,"listenerId":"lbl-rvunrb65","address":""}]`
	if got[TKEAnnotationHostPortMappingResult] != want || got[TKEAnnotationHostPortMappingStatus] != StatusReady {
		t.Errorf("got %v\nwant result %s and status Ready", got, want)
	}
}
