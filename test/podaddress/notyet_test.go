package podaddress

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// reconcileErrors reads controller-runtime's count of failed reconciles of
// the PodAddress controller (every provider of this test binary adds to it).
func reconcileErrors(t *testing.T) float64 {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "controller_runtime_reconcile_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "podaddress" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// TestBusyIsNotYet: a deregistration the cloud refuses because the load
// balancer is busy (the client does not resend deregistrations) is "not
// yet" for the PodAddress controller: the PodAddress comes back a second
// later and goes, and no reconcile counts as failed.
func TestBusyIsNotYet(t *testing.T) {
	startProvider(t, suite.Workers(8))
	ns, emu := ownPool(t, "busy", 1, 45000, 45009)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	p, err := churnPod(ctx, ns, "gs-0", "busy", "10.73.0.1", false)
	if err != nil {
		t.Fatal(err)
	}
	bound(t, ns, "gs-0")

	before := reconcileErrors(t)
	if err := emu.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{
		{Action: "BatchDeregisterTargets", Code: "FailedOperation.ResourceInOperating", Count: 2},
	}}); err != nil {
		t.Fatal(err)
	}
	deletePod(t, p)
	eventually(t, "the PodAddress gone", func() error {
		err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gs-0"}, &v1alpha1.PodAddress{})
		if err == nil {
			return errors.New("still there")
		}
		return client.IgnoreNotFound(err)
	})
	if got := emu.Calls()["BatchDeregisterTargets"]; got["FailedOperation.ResourceInOperating"] != 2 || got["OK"] != 1 {
		t.Fatalf("BatchDeregisterTargets answers %v, want 2 busy then 1 OK", got)
	}
	if n := len(targetsIn(emu)); n != 0 {
		t.Errorf("%d targets left", n)
	}
	if d := reconcileErrors(t) - before; d != 0 {
		t.Errorf("%v failed PodAddress reconciles while the load balancer was busy, want none", d)
	}
}
