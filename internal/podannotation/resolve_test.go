package podannotation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// roomPod declares: 8000 TCP (hostPort 18000) and 8000 UDP (hostPort
// 18000), "voice" 9000 UDP (hostPort 19000), "http" 80 (protocol unset),
// "sctp" 7000 SCTP, 6000 TCP and UDP with different hostPorts; a sidecar
// with "metrics" 9100; a plain init container with "setup" 9200.
func roomPod() *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	p := pod(nil)
	p.Spec.InitContainers = []corev1.Container{
		{Name: "setup", Ports: []corev1.ContainerPort{{Name: "setup", ContainerPort: 9200}}},
		{Name: "proxy", RestartPolicy: &always, Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9100, Protocol: corev1.ProtocolTCP}}},
	}
	p.Spec.Containers = []corev1.Container{
		{Name: "game", Ports: []corev1.ContainerPort{
			{Name: "game-tcp", ContainerPort: 8000, HostPort: 18000, Protocol: corev1.ProtocolTCP},
			{Name: "game-udp", ContainerPort: 8000, HostPort: 18000, Protocol: corev1.ProtocolUDP},
			{Name: "voice", ContainerPort: 9000, HostPort: 19000, Protocol: corev1.ProtocolUDP},
			{Name: "http", ContainerPort: 80},
			{Name: "sctp", ContainerPort: 7000, Protocol: corev1.ProtocolSCTP},
		}},
		{Name: "odd", Ports: []corev1.ContainerPort{
			{ContainerPort: 6000, HostPort: 16000, Protocol: corev1.ProtocolTCP},
			{ContainerPort: 6000, HostPort: 16001, Protocol: corev1.ProtocolUDP},
		}},
	}
	return p
}

func TestResolvePort(t *testing.T) {
	type want struct {
		Port     int32
		Protocol string
		HostPort int32
		Err      string
	}
	cases := map[string]struct {
		reason string
		pr     v1alpha1.PortRequest
		want   want
	}{
		"NamedUDP": {
			reason: "a name becomes its number, protocol and hostPort",
			pr:     v1alpha1.PortRequest{Port: name("voice")},
			want:   want{Port: 9000, Protocol: "UDP", HostPort: 19000},
		},
		"NamedUnsetProtocol": {
			reason: "an unset container protocol is TCP",
			pr:     v1alpha1.PortRequest{Port: name("http")},
			want:   want{Port: 80, Protocol: "TCP"},
		},
		"NamedMissing": {
			reason: "a name no container declares is an error",
			pr:     v1alpha1.PortRequest{Port: name("voip")},
			want:   want{Err: `no container port is named "voip"`},
		},
		"NamedInSidecar": {
			reason: "sidecar init containers keep running, so their ports count",
			pr:     v1alpha1.PortRequest{Port: name("metrics")},
			want:   want{Port: 9100, Protocol: "TCP"},
		},
		"NamedInPlainInit": {
			reason: "a plain init container has exited by the time the Pod serves",
			pr:     v1alpha1.PortRequest{Port: name("setup")},
			want:   want{Err: `no container port is named "setup"`},
		},
		"NumberUndeclared": {
			reason: "an undeclared number is allowed and defaults to TCP",
			pr:     v1alpha1.PortRequest{Port: num(7777)},
			want:   want{Port: 7777, Protocol: "TCP"},
		},
		"NumberUndeclaredUDP": {
			reason: "an undeclared number keeps an explicit protocol",
			pr:     v1alpha1.PortRequest{Port: num(7777), Protocol: "UDP"},
			want:   want{Port: 7777, Protocol: "UDP"},
		},
		"NumberAmbiguous": {
			reason: "a number declared for TCP and UDP needs a protocol",
			pr:     v1alpha1.PortRequest{Port: num(8000)},
			want:   want{Err: `port 8000 is declared for [TCP UDP]: say which protocol (TCP, UDP or TCP_UDP)`},
		},
		"NumberTCPUDP": {
			reason: "TCP_UDP over two declarations with the same hostPort",
			pr:     v1alpha1.PortRequest{Port: num(8000), Protocol: "TCP_UDP"},
			want:   want{Port: 8000, Protocol: "TCP_UDP", HostPort: 18000},
		},
		"NumberUDPOfPair": {
			reason: "UDP takes the UDP declaration's hostPort",
			pr:     v1alpha1.PortRequest{Port: num(6000), Protocol: "UDP"},
			want:   want{Port: 6000, Protocol: "UDP", HostPort: 16001},
		},
		"HostPortsDiffer": {
			reason: "TCP_UDP cannot serve two different hostPorts",
			pr:     v1alpha1.PortRequest{Port: num(6000), Protocol: "TCP_UDP"},
			want:   want{Err: `port 6000/TCP_UDP maps to hostPorts 16000 and 16001: a TCP_UDP address needs one`},
		},
		"QUICOnUDP": {
			reason: "QUIC runs on UDP, so the UDP declaration's hostPort applies",
			pr:     v1alpha1.PortRequest{Port: name("voice"), Protocol: "quic"},
			want:   want{Port: 9000, Protocol: "QUIC", HostPort: 19000},
		},
		"TCPSSLOnTCP": {
			reason: "TCP_SSL runs on TCP",
			pr:     v1alpha1.PortRequest{Port: num(8000), Protocol: "TCP_SSL"},
			want:   want{Port: 8000, Protocol: "TCP_SSL", HostPort: 18000},
		},
		"ProtocolOverridesName": {
			reason: "an explicit protocol wins over the named port's; its hostPort (UDP) does not apply to TCP",
			pr:     v1alpha1.PortRequest{Port: name("voice"), Protocol: "TCP"},
			want:   want{Port: 9000, Protocol: "TCP"},
		},
		"SCTP": {
			reason: "a CLB does not forward SCTP",
			pr:     v1alpha1.PortRequest{Port: name("sctp")},
			want:   want{Err: `port sctp is SCTP, which a CLB cannot forward: ask for TCP or UDP`},
		},
		"DigitsAsString": {
			reason: "a number written as a string is a number",
			pr:     v1alpha1.PortRequest{Port: name("9000")},
			want:   want{Port: 9000, Protocol: "UDP", HostPort: 19000},
		},
		"OutOfRange": {
			reason: "port numbers are 1-65535",
			pr:     v1alpha1.PortRequest{Port: num(70000)},
			want:   want{Err: `port 70000: a port number must be 1-65535`},
		},
		"BadProtocol": {
			reason: "a PortRequest from elsewhere is checked too",
			pr:     v1alpha1.PortRequest{Port: num(80), Protocol: "HTTP"},
			want:   want{Err: `port 80: protocol "HTTP": protocol must be TCP, UDP, TCP_UDP, TCP_SSL or QUIC`},
		},
	}
	p := roomPod()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got want
			var err error
			got.Port, got.Protocol, got.HostPort, err = ResolvePort(p, tc.pr)
			if err != nil {
				got = want{Err: err.Error()}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nResolvePort: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestReadinessGates(t *testing.T) {
	cases := map[string]struct {
		reason string
		gates  []string
		want   []corev1.PodConditionType
	}{
		"None":  {reason: "no gates, nothing to set"},
		"Ours":  {reason: "our gate", gates: []string{"example.com/other", ConditionAddressReady}, want: []corev1.PodConditionType{ConditionAddressReady}},
		"BCS":   {reason: "a Pod bcs created keeps bcs's gate", gates: []string{BCSConditionPortBindingReady}, want: []corev1.PodConditionType{BCSConditionPortBindingReady}},
		"Twice": {reason: "duplicates are listed once", gates: []string{ConditionAddressReady, BCSConditionPortBindingReady, ConditionAddressReady}, want: []corev1.PodConditionType{ConditionAddressReady, BCSConditionPortBindingReady}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := pod(nil)
			for _, g := range tc.gates {
				p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: corev1.PodConditionType(g)})
			}
			if diff := cmp.Diff(tc.want, ReadinessGates(p)); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
