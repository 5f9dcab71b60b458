package allocation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// TestBindingLimit: a stated bound bounds every namespace; without one, a
// pool shared with other namespaces bounds them (not its own) at the
// default; a pool of its namespace only, and an admin's CLBPortPool's pool,
// are unlimited.
func TestBindingLimit(t *testing.T) {
	five := int64(5)
	poolOf := func(ns string, c *clbv1alpha1.PoolConsumers) *clbv1alpha1.PortPool {
		pp := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}
		pp.Spec.Consumers = c
		return pp
	}
	all := clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}
	cases := map[string]struct {
		pp     *clbv1alpha1.PortPool
		limit  int
		exempt string
	}{
		"OwnOnly":      {pp: poolOf("team-a", nil)},
		"SameStated":   {pp: poolOf("team-a", &clbv1alpha1.PoolConsumers{MaxBindingsPerNamespace: &five}), limit: 5},
		"SharedStated": {pp: poolOf("team-a", &clbv1alpha1.PoolConsumers{Namespaces: all, MaxBindingsPerNamespace: &five}), limit: 5},
		"SharedDefault": {
			pp: poolOf("team-a", &clbv1alpha1.PoolConsumers{Namespaces: all}), limit: clbv1alpha1.DefaultMaxBindingsPerOtherNamespace, exempt: "team-a",
		},
		"SelectorDefault": {
			pp: poolOf("team-a", &clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentSelector,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}}}),
			limit: clbv1alpha1.DefaultMaxBindingsPerOtherNamespace, exempt: "team-a",
		},
		"AdminCLBPortPool": {pp: poolOf("tke-port-pools", &clbv1alpha1.PoolConsumers{Namespaces: all})},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			limit, exempt := BindingLimit(tc.pp)
			if limit != tc.limit || exempt != tc.exempt {
				t.Errorf("BindingLimit = %d, %q; want %d, %q", limit, exempt, tc.limit, tc.exempt)
			}
		})
	}
}
