package podaddress

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// TestUnservedProtocol: a TCP_UDP port on a TCP-only pool is refused at
// allocation (Invalid, a message, a warning on the Pod), and neither it
// nor the Pod's other port takes a slot: the pool's only port goes to the
// next Pod. Once the pool serves UDP too, the Pod binds.
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

	// Once the pool serves UDP too (and has room), the Pod binds: a pool
	// change is looked at again.
	pp := &clbv1alpha1.PortPool{}
	eventually(t, "the pool serves TCP and UDP on three ports", func() error {
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tcp"}, pp); err != nil {
			return err
		}
		pp.Spec.ForProvider.Protocols = []string{"TCP", "UDP"}
		pp.Spec.ForProvider.EndPort = 46002
		return kube.Update(context.Background(), pp)
	})
	pa = bound(t, ns, "relay")
	for _, b := range pa.Status.Bindings {
		if b.Protocol != v1alpha1.ProtocolTCPUDP {
			continue
		}
		for _, proto := range []string{"TCP", "UDP"} {
			if got := cloudTargets(lbID(l), b.ListenerIDs[proto]); len(got) != 1 || got[0] != "10.46.0.1:7777" {
				t.Errorf("%s targets %v, want [10.46.0.1:7777]", proto, got)
			}
		}
	}
}
