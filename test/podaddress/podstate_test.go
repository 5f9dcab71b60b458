package podaddress

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// podConditionIs waits until the Pod's address condition has status and a
// reason and message that contain reason and text.
func podConditionIs(t *testing.T, p *corev1.Pod, status corev1.ConditionStatus, reason, text string) {
	t.Helper()
	eventually(t, p.Name+" condition "+string(status)+" "+reason, func() error {
		got := &corev1.Pod{}
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		c := podCond(got)
		if c == nil || c.Status != status || !strings.Contains(c.Reason, reason) || !strings.Contains(c.Message, text) {
			return errors.Errorf("condition %+v", c)
		}
		return nil
	})
}

// TestCorrectedAnnotationReady: a Pod told that its annotation is
// malformed (the address condition False, without a readiness gate) and
// then corrected is bound, and the condition follows: True, with the
// address, not the old message.
func TestCorrectedAnnotationReady(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool", []string{"lb"}, 46000, 46004)
	p := pod(t, ns, "fixed", "10.46.0.1", map[string]string{bcsEnabled: "true", bcsPorts: "pool SCTP 7777"})
	podConditionIs(t, p, corev1.ConditionFalse, "InvalidAddressRequest", "SCTP")

	eventually(t, "correct the annotation", func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Annotations[bcsPorts] = "pool TCP 7777"
		return kube.Update(context.Background(), p)
	})
	pa := bound(t, ns, "fixed")
	podConditionIs(t, p, corev1.ConditionTrue, "Bound", pa.Status.Bindings[0].Address)
	podAnnotation(t, p, bcsStatus, "Ready")
}

// TestNoPortAvailableTold: a Pod waiting for a port of a full pool is told
// so (status NotReady, and the condition it asked for False with the
// reason), and Ready once it got a port.
func TestNoPortAvailableTold(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	lb(t, ns, "lb", "BGP")
	pool(t, ns, "one", []string{"lb"}, 47000, 47000)
	first := pod(t, ns, "first", "10.47.0.1", map[string]string{ourPorts: "7777 one"})
	bound(t, ns, "first")

	waiting := pod(t, ns, "waiting", "10.47.0.2", map[string]string{
		ourPorts: "7777 one", "network.tencentcloud.crossplane.io/readiness-gate": "true",
	})
	state(t, ns, "waiting", v1alpha1.StateNoPortAvailable)
	podAnnotation(t, waiting, ourStatus, "NotReady")
	podConditionIs(t, waiting, corev1.ConditionFalse, v1alpha1.StateNoPortAvailable, "no port available")
	// The annotation lists no address while none is allocated.
	podAnnotation(t, waiting, ourResult, "[]")

	deletePod(t, first)
	pa := bound(t, ns, "waiting")
	podAnnotation(t, waiting, ourStatus, "Ready")
	podConditionIs(t, waiting, corev1.ConditionTrue, "Bound", pa.Status.Bindings[0].Address)
}

// TestUnknownPortNameTold: a request for a container port name the Pod
// does not declare is Invalid, and the Pod is told: a warning Event that
// names the port and status NotReady.
func TestUnknownPortNameTold(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool", []string{"lb"}, 48000, 48004)
	p := pod(t, ns, "noname", "10.48.0.1", map[string]string{ourPorts: "voice pool"})
	pa := state(t, ns, "noname", v1alpha1.StateInvalid)
	if !strings.Contains(pa.Status.Message, "voice") {
		t.Errorf("message %q does not name the port", pa.Status.Message)
	}
	podWarning(t, ns, "noname", "InvalidAddressRequest", "voice")
	podAnnotation(t, p, ourStatus, "NotReady")
	// No readiness gate and no condition asked for: none is written.
	got := &corev1.Pod{}
	if err := kube.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatal(err)
	}
	if c := podCond(got); c != nil {
		t.Errorf("a Pod that asked for no condition got %+v", c)
	}
}

// TestTakeOverClearsReleaseAt: a held PodAddress taken over by a new Pod
// of the same name is bound for it and no longer carries the releaseAt
// of the old Pod.
func TestTakeOverClearsReleaseAt(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool", []string{"lb"}, 49000, 49004)
	ann := map[string]string{ourPorts: "game pool", keep: "1h"}
	p := pod(t, ns, "gs-0", "10.49.0.1", ann)
	first := bound(t, ns, "gs-0").Status.Bindings[0]
	deletePod(t, p)
	if held := state(t, ns, "gs-0", v1alpha1.StateHeld); held.Status.ReleaseAt == nil {
		t.Fatal("held binding has no releaseAt")
	}

	pod(t, ns, "gs-0", "10.49.0.2", ann)
	pa := bound(t, ns, "gs-0")
	if pa.Status.ReleaseAt != nil {
		t.Errorf("the bound PodAddress keeps releaseAt %s of the Pod it was held for", pa.Status.ReleaseAt)
	}
	if b := pa.Status.Bindings[0]; b.Port != first.Port || b.TargetIP != "10.49.0.2" {
		t.Errorf("binding %s:%d → %s, want the old port %d for the new Pod 10.49.0.2", b.LoadBalancerID, b.Port, b.TargetIP, first.Port)
	}
}
