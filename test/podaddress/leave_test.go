package podaddress

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// inOrder puts every binding on the pool's first load balancer while it
// has room, so a test knows where Pods land.
func inOrder(pp *clbv1alpha1.PortPool) {
	p := clbv1alpha1.PolicyInOrder
	pp.Spec.ForProvider.AllocationPolicy = &p
}

// updatePool changes a PortPool's spec, retrying on conflicts.
func updatePool(t *testing.T, pp *clbv1alpha1.PortPool, change func(*clbv1alpha1.PortPool)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		change(pp)
		return kube.Update(context.Background(), pp)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// boundOn waits until the PodAddress is Bound on load balancer lbID, its
// address on that load balancer's VIP, the Pod registered there and told
// that address, and returns the PodAddress.
func boundOn(t *testing.T, ns, name, lbID, ip string) *v1alpha1.PodAddress {
	t.Helper()
	pa := &v1alpha1.PodAddress{}
	eventually(t, name+" bound on "+lbID, func() error {
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pa); err != nil {
			return err
		}
		if pa.Status.State != v1alpha1.StateBound || len(pa.Status.Bindings) != 1 {
			return errors.Errorf("state %q, %d bindings: %s", pa.Status.State, len(pa.Status.Bindings), pa.Status.Message)
		}
		b := pa.Status.Bindings[0]
		if b.LoadBalancerID != lbID {
			return errors.Errorf("bound on %s", b.LoadBalancerID)
		}
		inv, ok := cloud.Inventory().LoadBalancer(lbID)
		if !ok || inv.VIP == "" || !strings.HasPrefix(b.Address, inv.VIP+":") {
			return errors.Errorf("address %q is not on %s's VIP", b.Address, lbID)
		}
		if got := cloudTargets(lbID, b.ListenerIDs["TCP"]); !slices.Equal(got, []string{ip + ":7777"}) {
			return errors.Errorf("targets of %s are %v", b.ListenerIDs["TCP"], got)
		}
		p := &corev1.Pod{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return err
		}
		if !strings.Contains(p.Annotations[bcsResult], b.Address[:strings.LastIndex(b.Address, ":")]) {
			return errors.Errorf("the Pod is told %q", p.Annotations[bcsResult])
		}
		return nil
	})
	return pa
}

// noTargets fails the test if any listener of lbID has a target.
func noTargets(t *testing.T, lbID string) {
	t.Helper()
	inv, _ := cloud.Inventory().LoadBalancer(lbID)
	for _, l := range inv.Listeners {
		if len(l.Targets) > 0 {
			t.Errorf("load balancer %s listener %s keeps targets %+v", lbID, l.ID, l.Targets)
		}
	}
}

// podEvent waits for an Event on the Pod with reason.
func podEvent(t *testing.T, ns, podName, reason string) {
	t.Helper()
	eventually(t, "a "+reason+" event on "+podName, func() error {
		l := &corev1.EventList{}
		if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range l.Items {
			if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == podName && e.Reason == reason {
				return nil
			}
		}
		return errors.Errorf("none among %d events", len(l.Items))
	})
}

func poolLB(pp *clbv1alpha1.PortPool, id string) (clbv1alpha1.PoolLoadBalancerStatus, bool) {
	for _, l := range pp.Status.AtProvider.LoadBalancers {
		if l.ID == id {
			return l, true
		}
	}
	return clbv1alpha1.PoolLoadBalancerStatus{}, false
}

// TestLoadBalancerRemoved takes a load balancer out of a pool by removing
// its reference: its Pods move to the other load balancer (new address,
// registered there, Pod told, an AddressMoved event), the pool's
// listeners on it are deleted and it leaves the pool's status. New Pods
// never land on it.
func TestLoadBalancerRemoved(t *testing.T) {
	startProvider(t, suite.PodAddress(podaddress.Options{PodEvents: podaddress.PodEventsAll}))
	ns := namespace(t)
	a, b := lbID(lb(t, ns, "a", "BGP")), lbID(lb(t, ns, "b", "BGP"))
	pp := pool(t, ns, "pool", []string{"a", "b"}, 44000, 44009, inOrder)

	for i := range 3 {
		name, ip := fmt.Sprintf("p-%d", i), fmt.Sprintf("10.44.0.%d", i+1)
		pod(t, ns, name, ip, map[string]string{bcsEnabled: "true", bcsPorts: "pool TCP 7777"})
		boundOn(t, ns, name, a, ip)
	}

	updatePool(t, pp, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.ForProvider.LoadBalancerIDRefs = pp.Spec.ForProvider.LoadBalancerIDRefs[1:]
	})
	for i := range 3 {
		name := fmt.Sprintf("p-%d", i)
		boundOn(t, ns, name, b, fmt.Sprintf("10.44.0.%d", i+1))
		podEvent(t, ns, name, "AddressMoved")
	}
	eventually(t, "load balancer "+a+" out of the pool and its listeners deleted", func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		if l, ok := poolLB(pp, a); ok {
			return errors.Errorf("still in status: %s, %d listeners", l.State, l.ListenersReady)
		}
		if inv, _ := cloud.Inventory().LoadBalancer(a); len(inv.Listeners) > 0 {
			return errors.Errorf("%d listeners left on %s", len(inv.Listeners), a)
		}
		return nil
	})
	noTargets(t, a)

	pod(t, ns, "p-new", "10.44.0.9", map[string]string{bcsEnabled: "true", bcsPorts: "pool TCP 7777"})
	boundOn(t, ns, "p-new", b, "10.44.0.9")
}

// TestLoadBalancerDrain drains a load balancer: its Pods move, it keeps
// the pool's listeners as Draining, and taking it off the drain list makes
// it usable again.
func TestLoadBalancerDrain(t *testing.T) {
	startProvider(t, suite.PodAddress(podaddress.Options{PodEvents: podaddress.PodEventsAll}))
	ns := namespace(t)
	a, b := lbID(lb(t, ns, "a", "BGP")), lbID(lb(t, ns, "b", "BGP"))
	pp := pool(t, ns, "pool", nil, 44100, 44104, inOrder, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.ForProvider.LoadBalancerIDs = []string{a, b}
	})
	for i := range 2 {
		name, ip := fmt.Sprintf("p-%d", i), fmt.Sprintf("10.44.1.%d", i+1)
		pod(t, ns, name, ip, map[string]string{bcsEnabled: "true", bcsPorts: "pool TCP 7777"})
		boundOn(t, ns, name, a, ip)
	}

	updatePool(t, pp, func(pp *clbv1alpha1.PortPool) { pp.Spec.ForProvider.Drain = []string{a} })
	for i := range 2 {
		name := fmt.Sprintf("p-%d", i)
		boundOn(t, ns, name, b, fmt.Sprintf("10.44.1.%d", i+1))
		podEvent(t, ns, name, "AddressMoved")
	}
	noTargets(t, a)
	eventually(t, a+" Draining with its listeners", func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		l, ok := poolLB(pp, a)
		if !ok || l.State != clbv1alpha1.PoolLBDraining || l.ListenersReady != l.ListenersWanted || l.Allocated != 0 {
			return errors.Errorf("%+v", l)
		}
		return nil
	})

	updatePool(t, pp, func(pp *clbv1alpha1.PortPool) { pp.Spec.ForProvider.Drain = nil })
	eventually(t, a+" Ready again", func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		if l, _ := poolLB(pp, a); l.State != clbv1alpha1.PoolLBReady {
			return errors.Errorf("%+v", l)
		}
		return nil
	})
	pod(t, ns, "p-new", "10.44.1.9", map[string]string{bcsEnabled: "true", bcsPorts: "pool TCP 7777"})
	boundOn(t, ns, "p-new", a, "10.44.1.9")
}

// TestPoolRecreated deletes a pool and creates it again under the same
// name over another load balancer, with the same provider running: new
// Pods are placed on the new load balancer only, and really registered.
func TestPoolRecreated(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	a, b := lbID(lb(t, ns, "a", "BGP")), lbID(lb(t, ns, "b", "BGP"))
	pp := pool(t, ns, "pool", []string{"a"}, 44200, 44204)
	p := pod(t, ns, "p-0", "10.44.2.1", map[string]string{bcsEnabled: "true", bcsPorts: "pool TCP 7777"})
	boundOn(t, ns, "p-0", a, "10.44.2.1")
	deletePod(t, p)
	eventually(t, "PodAddress p-0 gone", func() error {
		err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "p-0"}, &v1alpha1.PodAddress{})
		if kerrors.IsNotFound(err) {
			return nil
		}
		return errors.Errorf("still there (%v)", err)
	})
	if err := kube.Delete(context.Background(), pp); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pool gone", func() error {
		err := kube.Get(context.Background(), client.ObjectKeyFromObject(pp), &clbv1alpha1.PortPool{})
		if kerrors.IsNotFound(err) {
			return nil
		}
		return errors.Errorf("still there (%v)", err)
	})

	pool(t, ns, "pool", []string{"b"}, 44200, 44204)
	for i := range 3 {
		name, ip := fmt.Sprintf("q-%d", i), fmt.Sprintf("10.44.2.%d", i+10)
		pod(t, ns, name, ip, map[string]string{bcsEnabled: "true", bcsPorts: "pool TCP 7777"})
		boundOn(t, ns, name, b, ip)
	}
	noTargets(t, a)
}

// TestLoadBalancerDeletedInCloud deletes a load balancer of a pool behind
// the provider's back: the pool reports it NotFound and its Pods move to
// the pool's other load balancer.
func TestLoadBalancerDeletedInCloud(t *testing.T) {
	startProvider(t, suite.PodAddress(podaddress.Options{PodEvents: podaddress.PodEventsAll}))
	ns := namespace(t)
	a := lbIn(t, emulator.DefaultRegion, "doomed-"+ns)
	b := lbID(lb(t, ns, "b", "BGP"))
	pp := pool(t, ns, "pool", nil, 44300, 44304, inOrder, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.ForProvider.LoadBalancerIDs = []string{a, b}
	})
	for i := range 2 {
		name, ip := fmt.Sprintf("p-%d", i), fmt.Sprintf("10.44.3.%d", i+1)
		pod(t, ns, name, ip, map[string]string{bcsEnabled: "true", bcsPorts: "pool TCP 7777"})
		boundOn(t, ns, name, a, ip)
	}

	sdk := emulatortest.ConsoleClient(t, cloud.Endpoint(), emulator.DefaultRegion)
	req := clbsdk.NewDeleteLoadBalancerRequest()
	req.LoadBalancerIds = []*string{clb.Ptr(a)}
	eventually(t, "delete "+a+" in the cloud", func() error {
		_, err := sdk.DeleteLoadBalancer(req)
		return err
	})
	for i := range 2 {
		name := fmt.Sprintf("p-%d", i)
		boundOn(t, ns, name, b, fmt.Sprintf("10.44.3.%d", i+1))
		podEvent(t, ns, name, "AddressMoved")
	}
	eventually(t, a+" NotFound in the pool", func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		if l, _ := poolLB(pp, a); l.State != clbv1alpha1.PoolLBNotFound || l.Allocated != 0 {
			return errors.Errorf("%+v", l)
		}
		return nil
	})
}
