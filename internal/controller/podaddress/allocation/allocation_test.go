package allocation

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

func TestReadyPorts(t *testing.T) {
	lb := clbv1alpha1.PoolLoadBalancerStatus{Listeners: map[string]string{
		"TCP/100": "lbl-1", "UDP/100": "lbl-2", "TCP/101": "lbl-3", "UDP/102": "lbl-4", "bogus": "x",
	}}
	cases := map[string]struct {
		reason    string
		protocols []string
		want      []int32
	}{
		"TCP":    {"Every port with a TCP listener.", []string{"TCP"}, []int32{100, 101}},
		"TCPUDP": {"Only ports with both listeners serve a TCP+UDP pool.", []string{"TCP", "UDP"}, []int32{100}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := readyPorts(lb, tc.protocols)
			sortInt32(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nreadyPorts(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func sortInt32(s []int32) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func TestUnserved(t *testing.T) {
	pp := func(protocols ...string) *clbv1alpha1.PortPool {
		p := &clbv1alpha1.PortPool{}
		p.SetNamespace("ns")
		p.SetName("pool")
		p.Spec.ForProvider.Protocols = protocols
		return p
	}
	cases := map[string]struct {
		pool     *clbv1alpha1.PortPool
		protocol string
		refused  bool
	}{
		"DefaultTCP":     {pp(), "TCP", false},
		"UDPOnDefault":   {pp(), "UDP", true},
		"TCPUDPOnTCP":    {pp("TCP"), v1alpha1.ProtocolTCPUDP, true},
		"TCPUDPOnBoth":   {pp("TCP", "UDP"), v1alpha1.ProtocolTCPUDP, false},
		"UDPOnBoth":      {pp("TCP", "UDP"), "UDP", false},
		"QUICOnUDP":      {pp("UDP"), "QUIC", true},
		"TCPSSLOnTCPSSL": {pp("TCP_SSL"), "TCP_SSL", false},
	}
	for name, tc := range cases {
		if err := unserved(tc.pool, tc.protocol); (err != nil) != tc.refused {
			t.Errorf("%s: unserved = %v, want refused %t", name, err, tc.refused)
		}
	}
}
