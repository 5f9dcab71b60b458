package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/vpc/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/address"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

func newAddress(ns, name string, mods ...func(*v1alpha1.Address)) *v1alpha1.Address {
	a := &v1alpha1.Address{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AddressSpec{ForProvider: v1alpha1.AddressParameters{
			ISP: clb.Ptr("BGP"), InternetChargeType: clb.Ptr("TRAFFIC_POSTPAID_BY_HOUR"), Bandwidth: clb.Ptr(int64(10)),
			Tags: map[string]string{"team": "games"},
		}},
	}
	for _, m := range mods {
		m(a)
	}
	return a
}

// consoleVPC is a VPC client with the tests' own key pair, to change the
// cloud behind the provider's back.
func consoleVPC(t *testing.T) *vpc.Client {
	t.Helper()
	c, err := vpc.NewPool(vpc.Options{}).Client(clients.Config{SecretID: emulatortest.ConsoleSecretID, SecretKey: emulatortest.ConsoleSecretKey,
		Region: emulator.DefaultRegion, Endpoint: cloud.Endpoint(), Scheme: "http"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func inventoryEIP(id string) (emulator.InventoryEIP, bool) { return cloud.Inventory().EIP(id) }

// waitBound waits until the address is bound as the cloud and the status
// both say.
func waitBound(t *testing.T, cr *v1alpha1.Address, eni, ip, instance string) {
	t.Helper()
	waitFor(t, cr, func() error {
		got, _ := inventoryEIP(meta.GetExternalName(cr))
		at := cr.Status.AtProvider
		if got.ENIID != eni || got.PrivateIP != ip || got.InstanceID != instance || got.Busy ||
			at.BoundTo != eni+"/"+ip || at.InstanceID != instance {
			return errors.Errorf("cloud %+v, atProvider %+v; want %s/%s (instance %q)", got, at, eni, ip, instance)
		}
		return nil
	})
}

// addressRuns numbers the runs of TestAddressLifecycle.
var addressRuns atomic.Int32

// TestAddressLifecycle allocates an EIP for an Address, binds it to a
// private IP (its ENI found by the provider), moves it to another ENI and
// to an instance, renames it, and deletes it: unbound, then released.
func TestAddressLifecycle(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	// The CAM test runs this flow too, against the same emulator, where a
	// private IP can be on one ENI only: each run takes its own addresses.
	run := addressRuns.Add(1)
	ip := func(i int) string { return fmt.Sprintf("10.70.%d.%d", run, i) }
	instance := fmt.Sprintf("ins-addr%04d", run)
	eni1 := emulatortest.AddENI(t, cloud, "", ip(1))
	eni2 := emulatortest.AddENI(t, cloud, "", ip(2), ip(3))
	insENI := emulatortest.AddENI(t, cloud, instance, ip(4))

	cr := newAddress(ns, "game-eip", func(a *v1alpha1.Address) {
		a.Spec.ForProvider.Association = &v1alpha1.AddressAssociation{PrivateIPAddress: clb.Ptr(ip(1))}
	})
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	id := meta.GetExternalName(cr)
	got, ok := inventoryEIP(id)
	if !ok {
		t.Fatalf("address %q is not in the cloud", id)
	}
	if cr.Status.AtProvider.PublicIP == "" || cr.Status.AtProvider.PublicIP != got.IP || got.Name != "game-eip" ||
		got.Tags["team"] != "games" || got.Tags[mr.TagUID] != string(cr.GetUID()) {
		t.Errorf("cloud address %+v, atProvider %+v: want the public IP, name game-eip, the user's and the UID tag", got, cr.Status.AtProvider)
	}
	waitBound(t, cr, eni1, ip(1), "")

	// Another ENI's secondary IP: unbound, then bound there. Each move is
	// two tasks, unbind then bind; the provider looks again soon while its
	// own task runs rather than after the 5 s poll interval, which the
	// steps of a move would otherwise each wait for.
	moved := time.Now()
	eventually(t, "re-bind to "+eni2, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		cr.Spec.ForProvider.Association = &v1alpha1.AddressAssociation{NetworkInterfaceID: &eni2, PrivateIPAddress: clb.Ptr(ip(3))}
		cr.Spec.ForProvider.Name = clb.Ptr("game-eip-2")
		return kube.Update(ctx, cr)
	})
	waitBound(t, cr, eni2, ip(3), "")
	quickMove(t, "to "+eni2, moved)
	if got, _ := inventoryEIP(id); got.Name != "game-eip-2" {
		t.Errorf("cloud name %q, want game-eip-2", got.Name)
	}

	// An instance: bound to its primary ENI's primary IP.
	moved = time.Now()
	eventually(t, "re-bind to the instance", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		cr.Spec.ForProvider.Association = &v1alpha1.AddressAssociation{InstanceID: clb.Ptr(instance)}
		return kube.Update(ctx, cr)
	})
	waitBound(t, cr, insENI, ip(4), instance)
	quickMove(t, "to the instance", moved)

	// Deleting the resource unbinds and releases the address.
	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
	if got, ok := inventoryEIP(id); ok {
		t.Errorf("address %s still in the cloud after delete: %+v", id, got)
	}
}

// quickMove fails the test if a move took nearly two poll intervals (5 s
// each): without the follow-up while its own task runs, the unbind and the
// bind each wait one, so a move takes at least 10 s; with it about 1 s. The
// bound between leaves room for a busy machine.
func quickMove(t *testing.T, what string, since time.Time) {
	t.Helper()
	took := time.Since(since)
	t.Logf("move %s took %s", what, took.Round(time.Millisecond))
	if took >= 9*time.Second {
		t.Errorf("move %s took %s, nearly two poll intervals: its tasks were not followed up", what, took)
	}
}

// TestAddressBadInput: the API server refuses what the cloud would.
func TestAddressBadInput(t *testing.T) {
	ns := namespace(t)
	for name, mod := range map[string]func(*v1alpha1.Address){
		"bad-isp": func(a *v1alpha1.Address) { a.Spec.ForProvider.ISP = clb.Ptr("ACME") },
		"zero-bw": func(a *v1alpha1.Address) { a.Spec.ForProvider.Bandwidth = clb.Ptr(int64(0)) },
		"both-targets": func(a *v1alpha1.Address) {
			a.Spec.ForProvider.Association = &v1alpha1.AddressAssociation{InstanceID: clb.Ptr("ins-1"), NetworkInterfaceID: clb.Ptr("eni-1"), PrivateIPAddress: clb.Ptr("10.0.0.1")}
		},
		"empty-binding": func(a *v1alpha1.Address) { a.Spec.ForProvider.Association = &v1alpha1.AddressAssociation{} },
	} {
		if err := kube.Create(context.Background(), newAddress(ns, name, mod)); !kerrors.IsInvalid(err) {
			t.Errorf("%s: the API server answered %v, want Invalid", name, err)
		}
	}
}

// TestAddressObserveOnlyImport imports an EIP allocated elsewhere by its id
// with an Observe-only policy: it is reported, never changed, and deleting
// the resource leaves it.
func TestAddressObserveOnlyImport(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	c := consoleVPC(t)
	var id string
	eventually(t, "allocate an address outside the provider", func() error {
		ids, _, err := c.Allocate(ctx, vpc.AllocateRequest{Name: "made-elsewhere"})
		if err != nil {
			return err
		}
		id = ids[0]
		return nil
	})
	eventually(t, "the address is allocated", func() error {
		if a, _ := inventoryEIP(id); a.Status != vpc.StatusUnbind {
			return errors.Errorf("status %q", a.Status)
		}
		return nil
	})
	before := writeCalls()
	cr := &v1alpha1.Address{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "imported", Annotations: map[string]string{meta.AnnotationKeyExternalName: id}},
		Spec: v1alpha1.AddressSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{ManagementPolicies: xpv2.ManagementPolicies{xpv2.ManagementActionObserve}},
		},
	}
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	got, _ := inventoryEIP(id)
	if at := cr.Status.AtProvider; at.AddressID != id || at.Name != "made-elsewhere" || at.PublicIP != got.IP {
		t.Errorf("atProvider = %+v, want the imported address %+v", at, got)
	}
	if cr.Spec.ForProvider.Name != nil || cr.Spec.ForProvider.ISP != nil {
		t.Errorf("Observe-only import changed the spec: %+v", cr.Spec.ForProvider)
	}
	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
	if _, ok := inventoryEIP(id); !ok {
		t.Error("deleting an Observe-only resource released the address")
	}
	if after := writeCalls(); after != before {
		t.Errorf("Observe-only import wrote to the cloud: %d write calls before, %d after", before, after)
	}
}

// TestAddressOrphan: management policies without Delete (how a Crossplane
// v2 namespaced resource says deletionPolicy: Orphan) leave the address
// when the resource goes.
func TestAddressOrphan(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cr := newAddress(ns, "kept", func(a *v1alpha1.Address) {
		a.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionCreate,
			xpv2.ManagementActionUpdate, xpv2.ManagementActionLateInitialize}
	})
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	id := meta.GetExternalName(cr)
	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
	if _, ok := inventoryEIP(id); !ok {
		t.Errorf("orphaned address %s was released", id)
	}
}

// TestAddressAdoptsUnsavedAllocation leaves what a provider killed between
// AllocateAddresses and saving the external name leaves behind: an address
// allocated with the resource's ClientToken and UID tag, and a resource
// without an external name. The provider must adopt that address, not
// allocate a second one.
func TestAddressAdoptsUnsavedAllocation(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cr := newAddress(ns, "crashed", func(a *v1alpha1.Address) {
		a.SetAnnotations(map[string]string{meta.AnnotationKeyReconciliationPaused: "true"})
	})
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	var id string
	eventually(t, "the allocation the killed provider sent", func() error {
		ids, _, err := consoleVPC(t).Allocate(ctx, address.AllocateRequest(cr))
		if err != nil {
			return err
		}
		id = ids[0]
		return nil
	})
	eventually(t, "unpause", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		meta.RemoveAnnotations(cr, meta.AnnotationKeyReconciliationPaused)
		return kube.Update(ctx, cr)
	})
	waitReady(t, cr)
	if got := meta.GetExternalName(cr); got != id {
		t.Errorf("external name = %q, want the address allocated before the crash, %q", got, id)
	}
	n := 0
	for _, a := range cloud.Inventory().EIPs {
		if a.Tags[mr.TagUID] == string(cr.GetUID()) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d addresses carry the resource's UID, want exactly 1", n)
	}
	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
	if _, ok := inventoryEIP(id); ok {
		t.Errorf("address %s still in the cloud after delete", id)
	}
}
