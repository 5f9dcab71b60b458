package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// TestBusyIsNotYetForManagedResources: a listener whose creation meets a
// busy load balancer twice is created on the third try, a second apart,
// with no Warning event and no error condition on the way: busy is "not
// yet", not a failure.
func TestBusyIsNotYetForManagedResources(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	readyLB(t, ns, "lb")
	cloud.ResetCounters()
	if err := cloud.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{
		{Action: "CreateListener", Code: "FailedOperation.ResourceInOperating", Count: 2},
	}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cloud.SetFaults(emulator.Faults{}) })

	l := newListener(ns, "l", "lb", 9100)
	if err := kube.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	waitReady(t, l)
	if got := cloud.Calls()["CreateListener"]; got["FailedOperation.ResourceInOperating"] != 2 || got["OK"] != 1 {
		t.Fatalf("CreateListener answers %v, want 2 busy and then 1 OK", got)
	}
	events := &corev1.EventList{}
	if err := kube.List(ctx, events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == l.Name && e.Type == corev1.EventTypeWarning {
			t.Errorf("Warning event on the listener while its load balancer was busy: %s: %s", e.Reason, e.Message)
		}
	}
}
