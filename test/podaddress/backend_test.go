package podaddress

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// TestHostPortOnePort: "<port>/hostport" marks that port only. Of two
// ports of one Pod, the /hostport one targets the node and its hostPort,
// the other the Pod IP and its container port.
func TestHostPortOnePort(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool", []string{"lb"}, 44000, 44004)
	pod(t, ns, "mixed", "10.44.0.1", map[string]string{bcsEnabled: "true", bcsPorts: "pool TCP 7777/hostport;pool TCP 8888"},
		corev1.ContainerPort{ContainerPort: 7777, HostPort: 17777, Protocol: corev1.ProtocolTCP},
		corev1.ContainerPort{ContainerPort: 8888, Protocol: corev1.ProtocolTCP})
	pa := bound(t, ns, "mixed")
	if len(pa.Status.Bindings) != 2 {
		t.Fatalf("bindings %+v, want two", pa.Status.Bindings)
	}
	// setIP puts every test Pod on the node 10.0.0.1.
	want := map[int32]string{7777: "10.0.0.1:17777", 8888: "10.44.0.1:8888"}
	for _, b := range pa.Status.Bindings {
		if got := cloudTargets(lbID(l), b.ListenerIDs["TCP"]); !slices.Equal(got, []string{want[b.ContainerPort]}) {
			t.Errorf("port %d: targets %v, want [%s]", b.ContainerPort, got, want[b.ContainerPort])
		}
	}
	for _, pr := range pa.Spec.Ports {
		wantBackend := ""
		if pr.Port.IntValue() == 7777 {
			wantBackend = v1alpha1.BackendHostPort
		}
		if pr.Backend != wantBackend {
			t.Errorf("port %s: backend %q, want %q", pr.Port.String(), pr.Backend, wantBackend)
		}
	}
	if pa.Spec.Backend != v1alpha1.BackendPodIP {
		t.Errorf("the PodAddress's backend is %q, want PodIP", pa.Spec.Backend)
	}
}

// podWarning waits for a warning Event on the Pod with reason whose
// message contains text.
func podWarning(t *testing.T, ns, podName, reason, text string) {
	t.Helper()
	eventually(t, "a "+reason+" warning on "+podName, func() error {
		l := &corev1.EventList{}
		if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range l.Items {
			if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == podName && e.Type == corev1.EventTypeWarning &&
				e.Reason == reason && strings.Contains(e.Message, text) {
				return nil
			}
		}
		return errors.Errorf("none among %d events", len(l.Items))
	})
}
