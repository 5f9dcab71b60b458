package podaddress

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// TestUnservedProtocol: a TCP_UDP port on a TCP-only pool is refused at
// allocation (Invalid, a message, a warning on the Pod), and neither it
// nor the Pod's other port takes a slot: the pool's only port goes to the
// next Pod.
func TestUnservedProtocol(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	pool(t, ns, "tcp", []string{"lb"}, 46000, 46000)

	pod(t, ns, "relay", "10.46.0.1", map[string]string{bcsEnabled: "true", bcsPorts: "tcp TCP 8888;tcp TCP_UDP 7777"},
		corev1.ContainerPort{ContainerPort: 8888, Protocol: corev1.ProtocolTCP},
		corev1.ContainerPort{ContainerPort: 7777, Protocol: corev1.ProtocolTCP},
		corev1.ContainerPort{ContainerPort: 7777, Protocol: corev1.ProtocolUDP})
	pa := state(t, ns, "relay", v1alpha1.StateInvalid)
	if !strings.Contains(pa.Status.Message, "TCP_UDP") || !strings.Contains(pa.Status.Message, "UDP listeners") {
		t.Errorf("message %q does not say the pool has no UDP listeners", pa.Status.Message)
	}
	if len(pa.Status.Bindings) != 0 {
		t.Errorf("the refused Pod holds bindings %+v", pa.Status.Bindings)
	}
	podWarning(t, ns, "relay", "InvalidAddressRequest", "UDP listeners")

	// The pool's one slot is still free.
	pod(t, ns, "plain", "10.46.0.2", map[string]string{bcsEnabled: "true", bcsPorts: "tcp TCP 7777"})
	b := bound(t, ns, "plain").Status.Bindings[0]
	if b.Port != 46000 {
		t.Errorf("plain got port %d, want 46000", b.Port)
	}
	if got := cloudTargets(lbID(l), b.ListenerIDs["TCP"]); len(got) != 1 || got[0] != "10.46.0.2:7777" {
		t.Errorf("targets %v, want [10.46.0.2:7777]", got)
	}
	if pa := state(t, ns, "relay", v1alpha1.StateInvalid); len(pa.Status.Bindings) != 0 {
		t.Errorf("the refused Pod holds bindings %+v", pa.Status.Bindings)
	}
}
