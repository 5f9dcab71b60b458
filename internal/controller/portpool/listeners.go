package portpool

import (
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// listenerUse is one listener a binding uses: its port (the first of a
// segment) and layer-4 protocol.
type listenerUse struct {
	port     int32
	protocol string
}

// listenerSet holds the listeners the bindings of one load balancer use,
// counted as tke-extend counts its allocated listeners: TCP_UDP is a TCP
// and a UDP listener, TCP_SSL is keyed as TCP and QUIC as UDP, and a
// segment is one listener per protocol.
type listenerSet map[listenerUse]struct{}

func (s listenerSet) add(b networkv1alpha1.PortBinding) {
	for _, p := range networkv1alpha1.ListenerProtocols(b.Protocol) {
		s[listenerUse{port: b.Port, protocol: layer4(p)}] = struct{}{}
	}
}

// layer4 is the transport of a listener protocol.
func layer4(protocol string) string {
	switch protocol {
	case networkv1alpha1.ProtocolTCPSSL:
		return networkv1alpha1.ProtocolTCP
	case networkv1alpha1.ProtocolQUIC:
		return networkv1alpha1.ProtocolUDP
	}
	return protocol
}
