package portpool

import (
	"testing"

	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// TestListenerSet: a load balancer's allocated listeners, as tke-extend's
// CLBPortPool status counts them.
func TestListenerSet(t *testing.T) {
	b := func(protocol string, port, end int32) networkv1alpha1.PortBinding {
		return networkv1alpha1.PortBinding{Protocol: protocol, Port: port, EndPort: end}
	}
	cases := map[string]struct {
		reason   string
		bindings []networkv1alpha1.PortBinding
		want     int
	}{
		"None":   {reason: "no binding uses no listener", want: 0},
		"TCP":    {reason: "a TCP port is one listener", bindings: []networkv1alpha1.PortBinding{b("TCP", 100, 0)}, want: 1},
		"UDP":    {reason: "a UDP port is one listener", bindings: []networkv1alpha1.PortBinding{b("UDP", 100, 0)}, want: 1},
		"TCPUDP": {reason: "a TCP_UDP port is two listeners", bindings: []networkv1alpha1.PortBinding{b("TCP_UDP", 100, 0)}, want: 2},
		"Ports": {reason: "each port counts", want: 4,
			bindings: []networkv1alpha1.PortBinding{b("TCP", 100, 0), b("UDP", 101, 0), b("TCP_UDP", 102, 0)}},
		"Segments": {reason: "a segment is one port-range listener per protocol, whatever its length", want: 3,
			bindings: []networkv1alpha1.PortBinding{b("TCP_UDP", 100, 109), b("UDP", 110, 119)}},
		"TLSAsTCP": {reason: "TCP_SSL is keyed as TCP and QUIC as UDP, as tke-extend's allocator keys them", want: 2,
			bindings: []networkv1alpha1.PortBinding{b("TCP_SSL", 100, 0), b("TCP", 100, 0), b("QUIC", 101, 0), b("UDP", 101, 0)}},
		"SameListenerTwice": {reason: "two records of one listener count once", want: 2,
			bindings: []networkv1alpha1.PortBinding{b("TCP_UDP", 100, 0), b("UDP", 100, 0)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := listenerSet{}
			for _, bd := range tc.bindings {
				s.add(bd)
			}
			if len(s) != tc.want {
				t.Errorf("%s: %d listeners, want %d", tc.reason, len(s), tc.want)
			}
		})
	}
}
