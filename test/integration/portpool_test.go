package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/portpool"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

func newPool(ns, name string, start, end int64, mods ...func(*v1alpha1.PortPool)) *v1alpha1.PortPool {
	p := &v1alpha1.PortPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PortPoolSpec{ForProvider: v1alpha1.PortPoolParameters{
			StartPort: start,
			EndPort:   end,
		}},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func overLBs(names ...string) func(*v1alpha1.PortPool) {
	return func(p *v1alpha1.PortPool) {
		for _, n := range names {
			p.Spec.ForProvider.LoadBalancerIDRefs = append(p.Spec.ForProvider.LoadBalancerIDRefs, xpv2.NamespacedReference{Name: n})
		}
	}
}

// poolListeners returns the listeners of a load balancer that the pool
// ns/name owns (by their names), keyed "PROTOCOL/port".
func poolListeners(lbID, ns, name string) map[string]emulator.InventoryListener {
	lb, _ := inventoryLB(lbID)
	out := map[string]emulator.InventoryListener{}
	for _, l := range lb.Listeners {
		if strings.HasPrefix(l.Name, ns+"_"+name+"-") {
			out[fmt.Sprintf("%s/%d", l.Protocol, l.Port)] = l
		}
	}
	return out
}

// poolLB returns the status of one load balancer of a pool.
func poolLB(p *v1alpha1.PortPool, id string) (v1alpha1.PoolLoadBalancerStatus, bool) {
	for _, s := range p.Status.AtProvider.LoadBalancers {
		if s.ID == id {
			return s, true
		}
	}
	return v1alpha1.PoolLoadBalancerStatus{}, false
}

// createdListeners counts the successful CreateListener calls so far.
func createdListeners() int { return cloud.Calls()["CreateListener"]["OK"] }

// waitPool waits until the pool is Ready and Synced and cond holds.
func waitPool(t *testing.T, p *v1alpha1.PortPool, cond func() error) {
	t.Helper()
	waitFor(t, p, func() error {
		r, s := p.GetCondition(xpv2.TypeReady), p.GetCondition(xpv2.TypeSynced)
		if r.Status != "True" || s.Status != "True" {
			return errors.Errorf("Ready=%s (%s) Synced=%s (%s)", r.Status, r.Message, s.Status, s.Message)
		}
		if cond != nil {
			return cond()
		}
		return nil
	})
}

// everyLBComplete checks that every load balancer of the pool has all its
// listeners and the free slots to match.
func everyLBComplete(p *v1alpha1.PortPool, lbs int) error {
	st := p.Status.AtProvider
	if len(st.LoadBalancers) != lbs {
		return errors.Errorf("%d load balancers in status, want %d", len(st.LoadBalancers), lbs)
	}
	for _, lb := range st.LoadBalancers {
		if lb.State != v1alpha1.PoolLBReady || lb.ListenersReady != lb.ListenersWanted {
			return errors.Errorf("%s: state %s, %d/%d listeners", lb.ID, lb.State, lb.ListenersReady, lb.ListenersWanted)
		}
	}
	return nil
}

// TestPortPoolOverTwoLoadBalancers pre-creates the listeners of a pool on
// two load balancers, capped by the listener quota, in few batched calls;
// then repairs drift, blacklists a load balancer, refuses deletion while a
// binding uses the pool, and finally removes exactly its listeners.
func TestPortPoolOverTwoLoadBalancers(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lbA, lbB := readyLB(t, ns, "a"), readyLB(t, ns, "b")
	ids := []string{meta.GetExternalName(lbA), meta.GetExternalName(lbB)}

	// 60 ports, but the emulator allows 50 listeners per load balancer:
	// 50 slots, made by two CreateListener calls (49 + 1) per load balancer.
	quota := int64(cloud.Config().ListenerQuota)
	slots := min(60, quota)
	before := createdListeners()
	start := time.Now()
	p := newPool(ns, "game", 30000, 30059, overLBs("a", "b"), func(p *v1alpha1.PortPool) {
		p.Spec.ForProvider.Listener = &v1alpha1.PoolListenerSettings{Scheduler: clb.Ptr("WRR")}
	})
	if err := kube.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	// Ready needs one complete load balancer; wait for both.
	waitPool(t, p, func() error { return everyLBComplete(p, 2) })
	calls := createdListeners() - before
	t.Logf("pool of 2 x %d listeners complete in %s with %d CreateListener calls", slots, time.Since(start).Round(time.Millisecond), calls)

	st := p.Status.AtProvider
	if st.SlotsPerLoadBalancer != slots {
		t.Errorf("slotsPerLoadBalancer = %d, want %d (the quota caps the 60 ports)", st.SlotsPerLoadBalancer, slots)
	}
	if most := 2 * int((slots+48)/49); calls > most {
		t.Errorf("%d successful CreateListener calls, want at most %d (load balancers x ceil(ports/49))", calls, most)
	}
	if st.Free != 2*slots || st.Allocated != 0 || st.Bindings != 0 {
		t.Errorf("pool free/allocated/bindings = %d/%d/%d, want %d/0/0", st.Free, st.Allocated, st.Bindings, 2*slots)
	}
	for i, id := range ids {
		s, ok := poolLB(p, id)
		if !ok {
			t.Fatalf("load balancer %s is not in the pool's status", id)
		}
		lb, _ := inventoryLB(id)
		if len(s.VIPs) != 1 || s.VIPs[0] != lb.VIP || s.Region == "" || s.AutoCreated {
			t.Errorf("status of %s = vips %v region %q autoCreated %v, want the VIP %s", id, s.VIPs, s.Region, s.AutoCreated, lb.VIP)
		}
		if s.ListenersWanted != slots || s.Free != slots || len(s.Listeners) != int(slots) {
			t.Errorf("status of %s: wanted %d, free %d, %d listeners; want %d each", id, s.ListenersWanted, s.Free, len(s.Listeners), slots)
		}
		got := poolListeners(id, ns, "game")
		if len(got) != int(slots) || len(lb.Listeners) != int(slots) {
			t.Errorf("load balancer %d holds %d listeners, %d of the pool; want %d", i, len(lb.Listeners), len(got), slots)
		}
		for port := int64(30000); port < 30000+slots; port++ {
			k := fmt.Sprintf("TCP/%d", port)
			if l, ok := got[k]; !ok || l.EndPort != 0 || s.Listeners[k] != l.ID {
				t.Errorf("%s on %s: cloud %+v (found %v), status id %q", k, id, l, ok, s.Listeners[k])
			}
		}
	}

	// Drift: a listener deleted and another one changed in the cloud are
	// put back.
	gone := poolListeners(ids[0], ns, "game")["TCP/30007"].ID
	changed := poolListeners(ids[1], ns, "game")["TCP/30011"].ID
	del := clbsdk.NewDeleteListenerRequest()
	del.LoadBalancerId, del.ListenerId = &ids[0], &gone
	eventually(t, "delete a pool listener behind the provider's back", func() error {
		_, err := sdk(t).DeleteListener(del)
		return err
	})
	mod := clbsdk.NewModifyListenerRequest()
	mod.LoadBalancerId, mod.ListenerId, mod.Scheduler = &ids[1], &changed, clb.Ptr("LEAST_CONN")
	eventually(t, "change a pool listener behind the provider's back", func() error {
		_, err := sdk(t).ModifyListener(mod)
		return err
	})
	start = time.Now()
	eventually(t, "drift repaired", func() error {
		l, ok := poolListeners(ids[0], ns, "game")["TCP/30007"]
		if !ok || l.ID == gone {
			return errors.Errorf("TCP/30007 on %s: %+v (found %v)", ids[0], l, ok)
		}
		if s := clb.Deref(describeListener(t, ids[1], changed).Scheduler); s != "WRR" {
			return errors.Errorf("scheduler of %s is %s", changed, s)
		}
		return nil
	})
	waitPool(t, p, func() error {
		s, _ := poolLB(p, ids[0])
		if s.Listeners["TCP/30007"] == gone {
			return errors.New("status still names the deleted listener")
		}
		return everyLBComplete(p, 2)
	})
	t.Logf("drift repaired in %s", time.Since(start).Round(time.Millisecond))

	// A binding of a Pod counts against its load balancer. The PodAddress
	// is made by hand, as held for a Pod that is gone (so the PodAddress
	// controller keeps it for the keep duration), and sealed with the
	// provider's key as the provider writes it.
	sealer, err := env.Sealer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pa := &networkv1alpha1.PodAddress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pod-0"},
		Spec: networkv1alpha1.PodAddressSpec{
			Ports:        []networkv1alpha1.PortRequest{{Pools: []networkv1alpha1.PoolRef{{Name: "game"}}, Port: intstr.FromInt32(7777), Protocol: "TCP"}},
			KeepDuration: &metav1.Duration{Duration: time.Hour},
		},
	}
	if err := kube.Create(ctx, pa); err != nil {
		t.Fatal(err)
	}
	eventually(t, "record a held binding in the PodAddress", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pa), pa); err != nil {
			return err
		}
		pa.Status.State = networkv1alpha1.StateHeld
		pa.Status.ReleaseAt = &metav1.Time{Time: time.Now().Add(time.Hour)}
		pa.Status.Bindings = []networkv1alpha1.PortBinding{{Pool: ns + "/game", Protocol: "TCP", ContainerPort: 7777, LoadBalancerID: ids[0], Port: 30003}}
		if err := sealer.Seal(pa); err != nil {
			return err
		}
		return kube.Status().Update(ctx, pa)
	})
	waitPool(t, p, func() error {
		st := p.Status.AtProvider
		s, _ := poolLB(p, ids[0])
		if st.Bindings != 1 || st.Allocated != 1 || s.Allocated != 1 || s.Free != slots-1 || st.Free != 2*slots-1 {
			return errors.Errorf("bindings %d, allocated %d, %s allocated %d free %d, pool free %d", st.Bindings, st.Allocated, ids[0], s.Allocated, s.Free, st.Free)
		}
		return nil
	})

	// Blacklisting a load balancer keeps its listeners and takes its slots
	// out of the free count.
	p.Spec.ForProvider.Blacklist = []string{ids[1]}
	if err := kube.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitPool(t, p, func() error {
		s, _ := poolLB(p, ids[1])
		if s.State != v1alpha1.PoolLBBlacklisted || s.Free != 0 || p.Status.AtProvider.Free != slots-1 {
			return errors.Errorf("%s: state %s free %d; pool free %d", ids[1], s.State, s.Free, p.Status.AtProvider.Free)
		}
		return nil
	})
	if n := len(poolListeners(ids[1], ns, "game")); n != int(slots) {
		t.Errorf("the blacklisted load balancer holds %d pool listeners, want %d", n, slots)
	}

	// With no load balancer left to take bindings the pool needs a person:
	// Synced=False (the Observe error), which Argo CD's built-in check reads
	// as Degraded. Taking a load balancer off the blacklist brings it back.
	p.Spec.ForProvider.Blacklist = []string{ids[0], ids[1]}
	if err := kube.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, p, func() error {
		r, s := p.GetCondition(xpv2.TypeReady), p.GetCondition(xpv2.TypeSynced)
		if r.Status != "False" || s.Status != "False" || !strings.Contains(s.Message, "no load balancer of the pool can take bindings") {
			return errors.Errorf("Ready=%s (%s) Synced=%s (%s)", r.Status, r.Message, s.Status, s.Message)
		}
		return nil
	})
	p.Spec.ForProvider.Blacklist = []string{ids[1]}
	if err := kube.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitPool(t, p, func() error {
		if s, _ := poolLB(p, ids[0]); s.State != v1alpha1.PoolLBReady {
			return errors.Errorf("%s: state %s", ids[0], s.State)
		}
		return nil
	})
	t.Logf("pool Ready and Synced again %s after a load balancer left the blacklist", time.Since(start).Round(time.Millisecond))

	// Deleting the pool is refused while the binding exists, and touches
	// nothing. Its load balancer a, deleted with it as a garbage collector
	// deletes a composite's resources, waits for the pool.
	writes := writeCalls()
	if err := kube.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := kube.Delete(ctx, lbA); err != nil {
		t.Fatal(err)
	}
	waitFor(t, p, func() error {
		c := p.GetCondition(xpv2.TypeSynced)
		if c.Status != "False" || !strings.Contains(c.Message, "pool "+ns+"/game still has 1 bindings") {
			return errors.Errorf("Synced=%s %q", c.Status, c.Message)
		}
		return nil
	})
	waitFor(t, lbA, func() error {
		c := lbA.GetCondition(xpv2.TypeSynced)
		if c.Status != "False" || !strings.Contains(c.Message, "the load balancer is still used by PortPool "+ns+"/game;") {
			return errors.Errorf("Synced=%s %q", c.Status, c.Message)
		}
		return nil
	})
	if w := writeCalls(); w != writes {
		t.Errorf("a refused delete wrote to the cloud: %d write calls before, %d after", writes, w)
	}
	for _, id := range ids {
		if n := len(poolListeners(id, ns, "game")); n != int(slots) {
			t.Errorf("%s holds %d pool listeners after the refused delete, want %d", id, n, slots)
		}
	}

	// Once the PodAddress is gone the pool goes, with its listeners only,
	// and then load balancer a.
	if err := kube.Delete(ctx, pa); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitGone(t, p)
	t.Logf("pool gone %s after its last binding", time.Since(start).Round(time.Millisecond))
	if lb, ok := inventoryLB(ids[1]); !ok || len(lb.Listeners) != 0 {
		t.Errorf("%s after the pool's deletion: found %v, %d listeners; want it kept, empty", ids[1], ok, len(lb.Listeners))
	}
	waitGone(t, lbA)
	t.Logf("load balancer a gone %s after the pool's last binding", time.Since(start).Round(time.Millisecond))
	if _, ok := inventoryLB(ids[0]); ok {
		t.Errorf("%s is still in the cloud after its LoadBalancer was deleted", ids[0])
	}
}

// TestPortPoolSegmentsAndProtocols runs two pools on one load balancer: a
// UDP pool of 10-port segments (port-range listeners) and a TCP+UDP pool
// (both listeners on every port). A listener of someone else on a pool's
// port is reported, not adopted, and survives the pool.
func TestPortPoolSegmentsAndProtocols(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lb := readyLB(t, ns, "lb")
	id := meta.GetExternalName(lb)

	seg := newPool(ns, "rooms", 31000, 31029, overLBs("lb"), func(p *v1alpha1.PortPool) {
		p.Spec.ForProvider.SegmentLength = clb.Ptr(int64(10))
		p.Spec.ForProvider.Protocols = []string{"UDP"}
	})
	dual := newPool(ns, "dual", 32000, 32009, overLBs("lb"), func(p *v1alpha1.PortPool) {
		p.Spec.ForProvider.Protocols = []string{"TCP", "UDP"}
	})
	for _, p := range []*v1alpha1.PortPool{seg, dual} {
		if err := kube.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	waitPool(t, seg, func() error { return everyLBComplete(seg, 1) })
	waitPool(t, dual, func() error { return everyLBComplete(dual, 1) })

	got := poolListeners(id, ns, "rooms")
	if len(got) != 3 || seg.Status.AtProvider.SlotsPerLoadBalancer != 3 || seg.Status.AtProvider.Free != 3 {
		t.Errorf("segmented pool: %d listeners, %d slots, %d free; want 3 each", len(got), seg.Status.AtProvider.SlotsPerLoadBalancer, seg.Status.AtProvider.Free)
	}
	for _, port := range []int{31000, 31010, 31020} {
		if l, ok := got[fmt.Sprintf("UDP/%d", port)]; !ok || l.EndPort != port+9 {
			t.Errorf("segment %d: %+v (found %v), want UDP %d-%d", port, l, ok, port, port+9)
		}
	}
	got = poolListeners(id, ns, "dual")
	if len(got) != 20 || dual.Status.AtProvider.Free != 10 {
		t.Errorf("TCP+UDP pool: %d listeners, %d free; want 20 and 10", len(got), dual.Status.AtProvider.Free)
	}
	for port := 32000; port <= 32009; port++ {
		for _, proto := range []string{"TCP", "UDP"} {
			if _, ok := got[fmt.Sprintf("%s/%d", proto, port)]; !ok {
				t.Errorf("no %s listener on %d", proto, port)
			}
		}
	}

	// Someone else's listener inside a third pool's range is a conflict.
	req := clbsdk.NewCreateListenerRequest()
	req.LoadBalancerId, req.Protocol, req.Ports, req.ListenerNames = &id, clb.Ptr("TCP"), []*int64{clb.Ptr(int64(33002))}, []*string{clb.Ptr("someone-else")}
	eventually(t, "a listener made outside the provider", func() error {
		_, err := sdk(t).CreateListener(req)
		return err
	})
	clash := newPool(ns, "clash", 33000, 33004, overLBs("lb"))
	if err := kube.Create(ctx, clash); err != nil {
		t.Fatal(err)
	}
	waitFor(t, clash, func() error {
		c := clash.GetCondition(xpv2.TypeSynced)
		s, _ := poolLB(clash, id)
		if c.Status != "False" || !strings.Contains(c.Message, "TCP/33002 is taken by listener") || len(poolListeners(id, ns, "clash")) != 4 ||
			s.State != v1alpha1.PoolLBCreating || s.ListenersReady != 4 || s.Free != 4 {
			return errors.Errorf("Synced=%s %q, %d listeners in the cloud; status: state %s, %d listeners, %d free (want Creating, 4, 4)",
				c.Status, c.Message, len(poolListeners(id, ns, "clash")), s.State, s.ListenersReady, s.Free)
		}
		return nil
	})
	if n := cloud.Calls()["CreateListener"]["InvalidParameter.PortCheckFailed"]; n != 0 {
		t.Errorf("the provider sent %d conflicting CreateListener calls", n)
	}

	for _, p := range []*v1alpha1.PortPool{seg, dual, clash} {
		if err := kube.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []*v1alpha1.PortPool{seg, dual, clash} {
		waitGone(t, p)
	}
	inv, _ := inventoryLB(id)
	if len(inv.Listeners) != 1 || inv.Listeners[0].Name != "someone-else" {
		t.Errorf("after deleting the pools the load balancer holds %+v, want only the outside listener", inv.Listeners)
	}
}

// TestPortPoolQUICCertificate: a QUIC pool with a certificate creates its
// listeners with that certificate in CreateListener and becomes Ready (the
// cloud takes a certificate on QUIC listeners, as on TCP_SSL ones).
func TestPortPoolQUICCertificate(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lb := readyLB(t, ns, "lb")
	id := meta.GetExternalName(lb)
	modified := cloud.Calls()["ModifyListener"]["OK"]

	p := newPool(ns, "quic", 34000, 34004, overLBs("lb"), func(p *v1alpha1.PortPool) {
		p.Spec.ForProvider.Protocols = []string{"QUIC"}
		p.Spec.ForProvider.Listener = &v1alpha1.PoolListenerSettings{Certificate: &v1alpha1.Certificate{CertID: "cert-quic"}}
	})
	if err := kube.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitPool(t, p, func() error { return everyLBComplete(p, 1) })

	if got := poolListeners(id, ns, "quic"); len(got) != 5 || p.Status.AtProvider.Free != 5 {
		t.Fatalf("QUIC pool: %d listeners, %d free; want 5 and 5", len(got), p.Status.AtProvider.Free)
	}
	req := clbsdk.NewDescribeListenersRequest()
	req.LoadBalancerId, req.Protocol = &id, clb.Ptr("QUIC")
	resp, err := sdk(t).DescribeListeners(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range resp.Response.Listeners {
		if c := l.Certificate; c == nil || clb.Deref(c.CertId) != "cert-quic" || clb.Deref(c.SSLMode) != "UNIDIRECTIONAL" {
			t.Errorf("QUIC listener %d carries certificate %+v, want cert-quic UNIDIRECTIONAL", clb.Deref(l.Port), c)
		}
	}
	// Created with it, not patched on afterwards.
	if n := cloud.Calls()["ModifyListener"]["OK"] - modified; n != 0 {
		t.Errorf("%d ModifyListener calls; the certificate belongs in CreateListener", n)
	}

	if err := kube.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitGone(t, p)
}

// autoLBs returns the load balancers tagged with a pool's UID.
func autoLBs(uid string) []emulator.InventoryLoadBalancer {
	var out []emulator.InventoryLoadBalancer
	for _, lb := range cloud.Inventory().LoadBalancers {
		if lb.Tags[portpool.TagPoolUID] == uid && !lb.Deleting {
			out = append(out, lb)
		}
	}
	return out
}

// TestPortPoolAutoCreate grows an empty pool by exactly one load balancer,
// keeps it after the pool forgets everything about it (as a restarted
// provider would), grows again when more free slots are asked for, stops
// at maxLoadBalancers, and deletes what it created.
func TestPortPoolAutoCreate(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	p := newPool(ns, "auto", 34000, 34004, func(p *v1alpha1.PortPool) {
		p.Spec.ForProvider.AutoCreate = &v1alpha1.PoolAutoCreate{
			MaxLoadBalancers: 2,
			Template:         v1alpha1.LoadBalancerParameters{VipIsp: clb.Ptr("BGP"), Tags: map[string]string{"team": "rooms"}},
		}
	})
	if err := kube.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	uid := string(p.GetUID())
	waitPool(t, p, func() error { return everyLBComplete(p, 1) })
	lbs := autoLBs(uid)
	if len(lbs) != 1 {
		t.Fatalf("%d load balancers tagged with the pool, want 1", len(lbs))
	}
	lb := lbs[0]
	if lb.Tags[portpool.TagPool] != ns+"/auto" || lb.Tags["team"] != "rooms" || len(poolListeners(lb.ID, ns, "auto")) != 5 {
		t.Errorf("auto-created load balancer: tags %v, %d pool listeners", lb.Tags, len(poolListeners(lb.ID, ns, "auto")))
	}
	if s, _ := poolLB(p, lb.ID); !s.AutoCreated || s.Free != 5 {
		t.Errorf("status of the auto-created load balancer: %+v", s)
	}

	// Forget everything: no external name, no status. Several polls later
	// the pool still has the one load balancer, found by its tag.
	meta.SetExternalName(p, "")
	if err := kube.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status.AtProvider = v1alpha1.PortPoolObservation{}
	if err := kube.Status().Update(ctx, p); err != nil && !kerrors.IsConflict(err) {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	waitPool(t, p, func() error {
		if meta.GetExternalName(p) == "" {
			return errors.New("no external name yet")
		}
		return everyLBComplete(p, 1)
	})
	if n := len(autoLBs(uid)); n != 1 {
		t.Fatalf("%d load balancers tagged with the pool after it forgot them, want 1", n)
	}

	// Asking for more free slots than one load balancer has adds one more,
	// and maxLoadBalancers stops the growth there.
	p.Spec.ForProvider.AutoCreate.MinFreeSlots = clb.Ptr(int64(20))
	if err := kube.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitPool(t, p, func() error { return everyLBComplete(p, 2) })
	time.Sleep(4 * time.Second)
	if got := autoLBs(uid); len(got) != 2 {
		t.Fatalf("%d load balancers tagged with the pool, want maxLoadBalancers = 2", len(got))
	}

	if err := kube.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitGone(t, p)
	eventually(t, "auto-created load balancers deleted", func() error {
		for _, lb := range cloud.Inventory().LoadBalancers {
			if lb.Tags[portpool.TagPoolUID] == uid {
				return errors.Errorf("%s is still in the cloud (deleting: %v)", lb.ID, lb.Deleting)
			}
		}
		return nil
	})
}

// TestPortPoolExample applies examples/clb/portpool.yaml, waits for its
// load balancer and pools to be Ready, and deletes it without leaks.
func TestPortPoolExample(t *testing.T) {
	start := time.Now()
	objs, names := applyExampleReady(t, "clb/portpool.yaml")
	t.Logf("example Ready in %s", time.Since(start).Round(time.Millisecond))
	var uids []string
	for _, o := range objs {
		if o.GetKind() == v1alpha1.PortPoolKind {
			p := &v1alpha1.PortPool{}
			if err := kube.Get(context.Background(), client.ObjectKeyFromObject(o), p); err != nil {
				t.Fatal(err)
			}
			uids = append(uids, string(p.GetUID()))
			if p.Status.AtProvider.Free == 0 {
				t.Errorf("pool %s has no free slot: %+v", p.GetName(), p.Status.AtProvider)
			}
		}
	}
	sort.Strings(uids)
	start = time.Now()
	deleteExample(t, objs, names)
	t.Logf("example deleted in %s", time.Since(start).Round(time.Millisecond))
	for _, uid := range uids {
		if n := len(autoLBs(uid)); n != 0 {
			t.Errorf("%d auto-created load balancers of pool %s left in the cloud", n, uid)
		}
	}
}

// TestPortPoolOtherRegion serves a load balancer of another region
// (region:lb-… in loadBalancerIds) through a client of that region.
func TestPortPoolOtherRegion(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	const region = "ap-shanghai"
	sh := emulatortest.ConsoleClient(t, cloud.Endpoint(), region)
	req := clbsdk.NewCreateLoadBalancerRequest()
	req.LoadBalancerType, req.LoadBalancerName = clb.Ptr("OPEN"), clb.Ptr("other-region")
	var id string
	eventually(t, "a load balancer in "+region, func() error {
		resp, err := sh.CreateLoadBalancer(req)
		if err != nil {
			return err
		}
		id = *resp.Response.LoadBalancerIds[0]
		return nil
	})
	eventually(t, "the load balancer is up", func() error {
		if lb, ok := inventoryLB(id); !ok || lb.Status != 1 || lb.Region != region {
			return errors.Errorf("%+v", lb)
		}
		return nil
	})

	p := newPool(ns, "far", 35000, 35009, func(p *v1alpha1.PortPool) {
		p.Spec.ForProvider.LoadBalancerIDs = []string{region + ":" + id}
	})
	if err := kube.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitPool(t, p, func() error { return everyLBComplete(p, 1) })
	if s, _ := poolLB(p, id); s.Region != region || len(poolListeners(id, ns, "far")) != 10 {
		t.Errorf("status %+v; %d pool listeners in the cloud", s, len(poolListeners(id, ns, "far")))
	}
	if err := kube.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitGone(t, p)
	if lb, _ := inventoryLB(id); len(lb.Listeners) != 0 {
		t.Errorf("%d listeners left", len(lb.Listeners))
	}
	del := clbsdk.NewDeleteLoadBalancerRequest()
	del.LoadBalancerIds = []*string{&id}
	eventually(t, "delete the load balancer", func() error {
		_, err := sh.DeleteLoadBalancer(del)
		return err
	})
}
