package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// readyLB creates a LoadBalancer and waits until it is Ready.
func readyLB(t *testing.T, ns, name string) *v1alpha1.LoadBalancer {
	t.Helper()
	lb := newLB(ns, name)
	if err := kube.Create(context.Background(), lb); err != nil {
		t.Fatal(err)
	}
	waitReady(t, lb)
	return lb
}

func newListener(ns, name, lbName string, port int64, mods ...func(*v1alpha1.Listener)) *v1alpha1.Listener {
	l := &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ListenerSpec{ForProvider: v1alpha1.ListenerParameters{
			LoadBalancerIDRef: &xpv2.NamespacedReference{Name: lbName},
			Protocol:          "TCP",
			Port:              port,
			Scheduler:         clb.Ptr("WRR"),
		}},
	}
	for _, m := range mods {
		m(l)
	}
	return l
}

// cloudListener returns the emulator's listener of a load balancer.
func cloudListener(lbID, id string) (emulator.InventoryListener, bool) {
	lb, ok := inventoryLB(lbID)
	if !ok {
		return emulator.InventoryListener{}, false
	}
	for _, l := range lb.Listeners {
		if l.ID == id {
			return l, true
		}
	}
	return emulator.InventoryListener{}, false
}

// describeListener reads one listener through the SDK (the inventory does
// not carry every setting).
func describeListener(t *testing.T, lbID, id string) *clbsdk.Listener {
	t.Helper()
	req := clbsdk.NewDescribeListenersRequest()
	req.LoadBalancerId, req.ListenerIds = &lbID, []*string{&id}
	var out *clbsdk.Listener
	eventually(t, "describe listener", func() error {
		resp, err := sdk(t).DescribeListeners(req)
		if err != nil {
			return err
		}
		if len(resp.Response.Listeners) != 1 {
			return errors.Errorf("%d listeners", len(resp.Response.Listeners))
		}
		out = resp.Response.Listeners[0]
		return nil
	})
	return out
}

func TestListenerLifecycle(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lb := readyLB(t, ns, "lb")
	lbID := meta.GetExternalName(lb)

	cr := newListener(ns, "tcp-7000", "lb", 7000, func(l *v1alpha1.Listener) {
		l.Spec.ForProvider.HealthCheck = &v1alpha1.HealthCheck{Enabled: clb.Ptr(true), IntervalSeconds: clb.Ptr(int64(5))}
	})
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	id := meta.GetExternalName(cr)
	if got, ok := cloudListener(lbID, id); !ok || got.Port != 7000 || got.Protocol != "TCP" {
		t.Fatalf("cloud listener %s = %+v (found %v), want TCP 7000", id, got, ok)
	}
	if want := lb.Status.AtProvider.VIPs[0] + ":7000"; len(cr.Status.AtProvider.Addresses) == 0 || cr.Status.AtProvider.Addresses[0] != want {
		t.Errorf("addresses = %v, want %s", cr.Status.AtProvider.Addresses, want)
	}
	if cr.Spec.ForProvider.LoadBalancerID == nil || *cr.Spec.ForProvider.LoadBalancerID != lbID {
		t.Errorf("loadBalancerIdRef did not resolve to %s: %v", lbID, cr.Spec.ForProvider.LoadBalancerID)
	}

	// A spec change reaches the cloud.
	cr.Spec.ForProvider.Scheduler = clb.Ptr("LEAST_CONN")
	if err := kube.Update(ctx, cr); err != nil {
		t.Fatal(err)
	}
	eventually(t, "scheduler LEAST_CONN", func() error {
		if s := clb.Deref(describeListener(t, lbID, id).Scheduler); s != "LEAST_CONN" {
			return errors.Errorf("scheduler %q", s)
		}
		return nil
	})

	// A change in the cloud is corrected.
	mod := clbsdk.NewModifyListenerRequest()
	mod.LoadBalancerId, mod.ListenerId, mod.Scheduler = &lbID, &id, clb.Ptr("IP_HASH")
	eventually(t, "change the scheduler behind the provider's back", func() error {
		_, err := sdk(t).ModifyListener(mod)
		return err
	})
	eventually(t, "drift corrected", func() error {
		if s := clb.Deref(describeListener(t, lbID, id).Scheduler); s != "LEAST_CONN" {
			return errors.Errorf("scheduler %q", s)
		}
		return nil
	})

	// Deleting the resource deletes the listener.
	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
	if _, ok := cloudListener(lbID, id); ok {
		t.Errorf("listener %s still in the cloud after delete", id)
	}
}

func TestListenerOrphanAndImport(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lb := readyLB(t, ns, "lb")
	lbID := meta.GetExternalName(lb)

	kept := newListener(ns, "kept", "lb", 7100, func(l *v1alpha1.Listener) {
		l.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionCreate, xpv2.ManagementActionUpdate, xpv2.ManagementActionLateInitialize}
	})
	if err := kube.Create(ctx, kept); err != nil {
		t.Fatal(err)
	}
	waitReady(t, kept)
	id := meta.GetExternalName(kept)
	if err := kube.Delete(ctx, kept); err != nil {
		t.Fatal(err)
	}
	waitGone(t, kept)
	if _, ok := cloudListener(lbID, id); !ok {
		t.Fatalf("orphaned listener %s was deleted from the cloud", id)
	}

	// Import the orphan, observing only.
	before := writeCalls()
	imp := &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "imported", Annotations: map[string]string{meta.AnnotationKeyExternalName: id}},
		Spec: v1alpha1.ListenerSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{ManagementPolicies: xpv2.ManagementPolicies{xpv2.ManagementActionObserve}},
			ForProvider:         v1alpha1.ListenerParameters{LoadBalancerID: &lbID, Protocol: "TCP", Port: 7100},
		},
	}
	if err := kube.Create(ctx, imp); err != nil {
		t.Fatal(err)
	}
	waitReady(t, imp)
	if imp.Status.AtProvider.ID != id || len(imp.Status.AtProvider.Addresses) == 0 {
		t.Errorf("atProvider = %+v, want the imported listener", imp.Status.AtProvider)
	}
	time.Sleep(2 * time.Second)
	if after := writeCalls(); after != before {
		t.Errorf("Observe-only import wrote to the cloud: %d write calls before, %d after", before, after)
	}
}

// TestListenersUnderFaults creates 50 listeners while the emulator answers
// 10 % of writes with a busy load balancer and 10 % of all calls with a
// throttle. Every listener must become Ready, with exactly one listener in
// the cloud per port.
func TestListenersUnderFaults(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	const lbs, perLB = 5, 10
	lbIDs := make([]string, lbs)
	for i := range lbs {
		lbIDs[i] = meta.GetExternalName(readyLB(t, ns, fmt.Sprintf("lb-%d", i)))
	}
	if err := cloud.SetFaults(emulator.Faults{
		Rules:     []emulator.FaultRule{{Action: "*", Code: "RequestLimitExceeded", Rate: 0.1}},
		BusyStorm: &emulator.BusyStorm{LoadBalancerIds: lbIDs, Rate: 0.1},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cloud.SetFaults(emulator.Faults{}) })

	var crs []*v1alpha1.Listener
	for i := range lbs * perLB {
		l := newListener(ns, fmt.Sprintf("l-%02d", i), fmt.Sprintf("lb-%d", i%lbs), int64(9000+i/lbs))
		if err := kube.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
		crs = append(crs, l)
	}
	start := time.Now()
	for _, l := range crs {
		waitReady(t, l)
	}
	t.Logf("%d listeners Ready in %s under faults; calls: %v", len(crs), time.Since(start).Round(time.Millisecond), cloud.Calls()["CreateListener"])
	_ = cloud.SetFaults(emulator.Faults{})

	for i, id := range lbIDs {
		lb, _ := inventoryLB(id)
		ports := map[string]int{}
		for _, l := range lb.Listeners {
			ports[fmt.Sprintf("%s/%d", l.Protocol, l.Port)]++
		}
		if len(lb.Listeners) != perLB {
			t.Errorf("load balancer %d has %d listeners, want %d: %v", i, len(lb.Listeners), perLB, ports)
		}
		for p, n := range ports {
			if n != 1 {
				t.Errorf("load balancer %d has %d listeners on %s", i, n, p)
			}
		}
	}
}

func TestListenerBadInput(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cases := map[string]struct {
		mod  func(*v1alpha1.Listener)
		want string
	}{
		"PortZero":           {func(l *v1alpha1.Listener) { l.Spec.ForProvider.Port = 0 }, "spec.forProvider.port"},
		"EndPortBelowPort":   {func(l *v1alpha1.Listener) { l.Spec.ForProvider.EndPort = clb.Ptr(int64(6000)) }, "endPort must be greater than port"},
		"HTTPSNoCertificate": {func(l *v1alpha1.Listener) { l.Spec.ForProvider.Protocol = "HTTPS"; l.Spec.ForProvider.Scheduler = nil }, "need a certificate"},
		"PortRangeOnHTTP": {func(l *v1alpha1.Listener) {
			l.Spec.ForProvider.Protocol = "HTTP"
			l.Spec.ForProvider.Scheduler = nil
			l.Spec.ForProvider.EndPort = clb.Ptr(int64(7010))
		}, "only for TCP and UDP"},
		"SessionExpireTooLow":  {func(l *v1alpha1.Listener) { l.Spec.ForProvider.SessionExpireTime = clb.Ptr(int64(10)) }, "sessionExpireTime is 0 (off) or 30-3600"},
		"SchedulerOnHTTP":      {func(l *v1alpha1.Listener) { l.Spec.ForProvider.Protocol = "HTTP" }, "take scheduler, sessionExpireTime and healthCheck on their Rules"},
		"CertificateOnTCPOnly": {func(l *v1alpha1.Listener) { l.Spec.ForProvider.Certificate = &v1alpha1.Certificate{CertID: "c"} }, "certificate applies to HTTPS"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := newListener(ns, strings.ToLower(name), "lb", 7000, tc.mod)
			err := kube.Create(ctx, l)
			if !kerrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Create: got %v, want an Invalid error containing %q", err, tc.want)
			}
		})
	}

	// Immutable fields say so.
	lb := readyLB(t, ns, "lb")
	_ = lb
	l := newListener(ns, "immutable", "lb", 7300)
	if err := kube.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	waitReady(t, l)
	l.Spec.ForProvider.Port = 7301
	if err := kube.Update(ctx, l); !kerrors.IsInvalid(err) || !strings.Contains(err.Error(), "port is immutable") {
		t.Errorf("changing the port: got %v, want an Invalid error saying the port is immutable", err)
	}
}

// TestListenerPortConflict shows that a port already used by a listener the
// provider does not manage is reported clearly instead of retried blindly.
func TestListenerPortConflict(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lb := readyLB(t, ns, "lb")
	lbID := meta.GetExternalName(lb)
	req := clbsdk.NewCreateListenerRequest()
	req.LoadBalancerId, req.Protocol, req.Ports, req.ListenerNames = &lbID, clb.Ptr("TCP"), []*int64{clb.Ptr(int64(7400))}, []*string{clb.Ptr("someone-else")}
	eventually(t, "a listener made outside the provider", func() error {
		_, err := sdk(t).CreateListener(req)
		return err
	})
	l := newListener(ns, "clash", "lb", 7400)
	if err := kube.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	waitFor(t, l, func() error {
		c := l.GetCondition(xpv2.TypeSynced)
		if c.Status != "False" || !strings.Contains(c.Message, "is used by listener") {
			return errors.Errorf("Synced=%s %q", c.Status, c.Message)
		}
		return nil
	})
	if n := cloud.Calls()["CreateListener"]["InvalidParameter.PortCheckFailed"]; n != 0 {
		t.Errorf("the provider sent %d conflicting CreateListener calls", n)
	}
}
