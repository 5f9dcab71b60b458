package address

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/vpc/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc/fake"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

var _ api = (*fake.Cloud)(nil)

func address(as *v1alpha1.AddressAssociation) *v1alpha1.Address {
	cr := &v1alpha1.Address{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1"}}
	cr.Spec.ForProvider.Association = as
	return cr
}

// step is one reconcile: Observe, then the write it calls for.
func step(t *testing.T, e *external, cr *v1alpha1.Address) (exists, upToDate bool) {
	t.Helper()
	ctx := context.Background()
	obs, err := e.Observe(ctx, cr)
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	switch {
	case cr.GetDeletionTimestamp() != nil && obs.ResourceExists:
		_, err = e.Delete(ctx, cr)
	case !obs.ResourceExists:
		_, err = e.Create(ctx, cr)
	case !obs.ResourceUpToDate:
		_, err = e.Update(ctx, cr)
	}
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	return obs.ResourceExists, obs.ResourceUpToDate
}

// TestLifecycle: an address is allocated, bound to the ENI holding its
// private IP once allocated, left alone while a task runs, then unbound
// and released on deletion, one write per settled state.
func TestLifecycle(t *testing.T) {
	cloud := fake.New()
	cloud.ENIs["10.0.0.5"] = "eni-1"
	cr := address(&v1alpha1.AddressAssociation{PrivateIPAddress: clb.Ptr("10.0.0.5")})
	e := &external{c: cloud}

	step(t, e, cr) // allocates
	if got := meta.GetExternalName(cr); got != "eip-1" {
		t.Fatalf("external name = %q, want eip-1", got)
	}
	step(t, e, cr) // CREATING: waits
	if got := cr.GetCondition(xpv2.TypeReady).Reason; got != xpv2.ReasonCreating {
		t.Errorf("allocating: Ready reason %q, want Creating", got)
	}
	cloud.Settle()
	step(t, e, cr) // UNBIND: binds
	step(t, e, cr) // BINDING: waits
	if got := cr.Status.AtProvider; got.Status != vpc.StatusBinding || got.Task.State != mr.TaskRunning {
		t.Errorf("binding: status %s, task %+v", got.Status, got.Task)
	}
	cloud.Settle()
	if _, upToDate := step(t, e, cr); !upToDate || cr.Status.AtProvider.BoundTo != "eni-1/10.0.0.5" {
		t.Errorf("bound: up to date %v, boundTo %q", upToDate, cr.Status.AtProvider.BoundTo)
	}

	cr.SetDeletionTimestamp(&metav1.Time{})
	step(t, e, cr) // unbinds
	step(t, e, cr) // UNBINDING: waits
	cloud.Settle()
	step(t, e, cr) // releases
	step(t, e, cr) // OFFLINING: waits
	cloud.Settle()
	if exists, _ := step(t, e, cr); exists {
		t.Error("released address still exists")
	}
	want := []string{"Allocate [eip-1] web", "Associate eip-1 eni-1/10.0.0.5", "Disassociate eip-1", "Release [eip-1]"}
	if d := cmp.Diff(want, cloud.Log()); d != "" {
		t.Errorf("writes: -want, +got:\n%s", d)
	}
}

// TestAdoptLostAllocation: an allocation whose answer was lost is found by
// its UID tag, not allocated again.
func TestAdoptLostAllocation(t *testing.T) {
	cloud := fake.New()
	cr := address(nil)
	if _, _, err := cloud.Allocate(context.Background(), AllocateRequest(cr)); err != nil {
		t.Fatal(err)
	}
	cloud.Settle()
	obs, err := (&external{c: cloud}).Observe(context.Background(), cr)
	if err != nil {
		t.Fatal(err)
	}
	if !obs.ResourceExists || !obs.ResourceLateInitialized || meta.GetExternalName(cr) != "eip-1" {
		t.Errorf("observation %+v, external name %q: want eip-1 adopted", obs, meta.GetExternalName(cr))
	}
}

// TestFailedBind: a bind whose task fails shows in the task status, and the
// address is bound again once settled.
func TestFailedBind(t *testing.T) {
	cloud := fake.New()
	cloud.Instances["ins-1"] = "10.0.0.7"
	cloud.ENIs["10.0.0.7"] = "eni-7"
	cr := address(&v1alpha1.AddressAssociation{InstanceID: clb.Ptr("ins-1")})
	e := &external{c: cloud}
	step(t, e, cr)
	cloud.Settle()
	step(t, e, cr) // binds
	cloud.Fail()
	obs, err := e.Observe(context.Background(), cr)
	if err != nil || obs.ResourceUpToDate || cr.Status.AtProvider.Task.State != mr.TaskFailed {
		t.Errorf("failed bind: %v, up to date %v, task %+v", err, obs.ResourceUpToDate, cr.Status.AtProvider.Task)
	}
	step(t, e, cr) // binds again
	cloud.Settle()
	if _, upToDate := step(t, e, cr); !upToDate || cr.Status.AtProvider.InstanceID != "ins-1" {
		t.Errorf("bound: up to date %v, instance %q", upToDate, cr.Status.AtProvider.InstanceID)
	}
}

// TestDeleteGone: deleting an address the cloud no longer has succeeds.
func TestDeleteGone(t *testing.T) {
	cr := address(nil)
	meta.SetExternalName(cr, "eip-9")
	cr.Status.AtProvider.Status = vpc.StatusUnbind
	if _, err := (&external{c: fake.New()}).Delete(context.Background(), cr); err != nil {
		t.Errorf("Delete: %v", err)
	}
}
