package podaddress

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/tkestandin"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/udpstream"
)

// newTKEStandIn binds Pods on load balancer lbID as tke-extend does,
// with the console's key so that its calls are not the provider's.
func newTKEStandIn(t *testing.T, lbID string) *tkestandin.StandIn {
	t.Helper()
	s, err := tkestandin.New(context.Background(), kube, clients.Config{SecretID: emulatortest.ConsoleSecretID, SecretKey: emulatortest.ConsoleSecretKey,
		Region: emulator.DefaultRegion, Endpoint: cloud.Endpoint(), Scheme: "http"}, lbID, wait)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tkeBind binds p's port 7777/UDP on public port port of pool with s and
// returns the result's entry.
func tkeBind(t *testing.T, s *tkestandin.StandIn, p *corev1.Pod, pool string, port int32) podannotation.TKEPortMapping {
	t.Helper()
	e, err := s.Bind(context.Background(), p, pool, 7777, port)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestSwitchFromTKEExtend: a cluster as tke-extend-network-controller v2
// leaves it (listeners per Pod, targets, results), with tke-extend
// stopped. A dry run (the CLBPortPool's tke-extend-switch: DryRun) writes
// nothing to the cloud, the Pods or PodAddresses, also for a Pod
// tke-extend has not bound yet, and tells each Pod what would be kept. The
// switch then keeps every bound Pod's VIP:port, listener and target, and
// its result annotation byte for byte; the emulator sees no
// deregistration and no listener deleted, and every listener keeps its
// target at every moment; the pool takes the listeners over, and tags the
// load balancer tke-extend created for the pool as its own (untagged in the
// dry run). Through it
// all, from before the provider starts until the adoption is recorded, a
// player sends a UDP packet every 10 ms through each kept VIP:port (the
// emulator's data plane, on loopback) to its game server on the Pod's
// loopback IP: every packet is answered, by that server. A Pod whose result was forged to name another Pod's listener is
// refused before any write and gets a new address; so does a Pod created
// after the switch. A Pod whose request no longer names the port its
// result gives (gs-moved) gets a new address too; its tke-extend listener
// is taken over by the pool all the same (none is left unowned: status
// tkeListeners empty) but keeps forwarding to it, its slot given to no
// other Pod, and a player through its old address is answered by it
// until the Pod is deleted; then the pool deregisters that target and
// the slot is free, the listener still the pool's.
func TestSwitchFromTKEExtend(t *testing.T) {
	const pods = 6
	ctx := context.Background()
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podannotation.TKEPoolNamespace}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ns := namespace(t)
	poolName := "switch-" + ns
	lbID := emulatortest.ExistingLB(t, cloud, emulator.DefaultRegion, "switch-"+ns, wait)
	s := newTKEStandIn(t, lbID)
	annotations := map[string]string{
		podannotation.TKEAnnotationEnableMapping: "true",
		podannotation.TKEAnnotationPortMapping:   "7777 UDP " + poolName,
	}
	gamePort := corev1.ContainerPort{ContainerPort: 7777, Protocol: corev1.ProtocolUDP}

	// tke-extend at work: each Pod bound on its own port. Each game
	// server answers on its loopback Pod IP.
	var gs []*corev1.Pod
	var results []podannotation.TKEPortMapping
	for i := range pods {
		p := pod(t, ns, fmt.Sprintf("gs-%d", i), gsIP(i), annotations, gamePort)
		udpEcho(t, p.Name, gsIP(i)+":7777")
		results = append(results, tkeBind(t, s, p, poolName, int32(30000+i))) //nolint:gosec // G115: test ports.
		gs = append(gs, p)
	}
	// A load balancer tke-extend created for the pool, and a Pod on it.
	autoID := emulatortest.ExistingLB(t, cloud, emulator.DefaultRegion, "auto-"+ns, wait)
	auto := pod(t, ns, "gs-auto", autoIP, annotations, gamePort)
	udpEcho(t, auto.Name, autoIP+":7777")
	autoS := newTKEStandIn(t, autoID)
	autoResult := tkeBind(t, autoS, auto, poolName, 30000)
	// A Pod tke-extend bound on 7777 that now asks for 7778: not kept.
	moved := pod(t, ns, "gs-moved", movedIP, map[string]string{
		podannotation.TKEAnnotationEnableMapping: "true",
		podannotation.TKEAnnotationPortMapping:   "7778 UDP " + poolName,
	}, gamePort, corev1.ContainerPort{ContainerPort: 7778, Protocol: corev1.ProtocolUDP})
	udpEcho(t, moved.Name, movedIP+":7777")
	movedResult := tkeBind(t, s, moved, poolName, movedPort)
	// A Pod tke-extend has not bound yet.
	fresh := pod(t, ns, "gs-fresh", "10.31.0.60", annotations, gamePort)
	// A tenant forges a result naming gs-0's listener.
	forger := pod(t, ns, "forger", "10.31.0.99", annotations, gamePort)
	forged := results[0]
	if err := s.Annotate(ctx, forger, []podannotation.TKEPortMapping{forged}); err != nil {
		t.Fatal(err)
	}
	before := map[string]*corev1.Pod{}
	for _, p := range append(append([]*corev1.Pod(nil), gs...), forger, auto, fresh, moved) {
		got := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatal(err)
		}
		before[p.Name] = got
	}

	// tke-extend is stopped; its CLBPortPool stays, marked for a dry run
	// as the example shows.
	if _, err := testenv.Apply(ctx, kube, filepath.Join(testenv.RepoRoot(), "examples", "tke-extend", "clbportpool-switch.yaml"), func(u *unstructured.Unstructured) {
		u.SetName(poolName)
		_ = unstructured.SetNestedStringSlice(u.Object, []string{lbID}, "spec", "exsistedLoadBalancerIDs")
		_ = unstructured.SetNestedField(u.Object, int64(30009), "spec", "endPort")
	}); err != nil {
		t.Fatal(err)
	}
	cpp := &tkev1alpha1.CLBPortPool{}
	if err := kube.Get(ctx, client.ObjectKey{Name: poolName}, cpp); err != nil {
		t.Fatal(err)
	}
	// The status tke-extend wrote: the load balancer it created is known
	// from there only.
	cpp.Status = tkev1alpha1.CLBPortPoolStatus{State: tkev1alpha1.StateActive, LoadbalancerStatuses: []tkev1alpha1.LoadBalancerStatus{
		{LoadbalancerID: lbID, State: tkev1alpha1.LBStateRunning, Allocated: pods},
		{LoadbalancerID: autoID, State: tkev1alpha1.LBStateRunning, Allocated: 1, AutoCreated: ptr.To(true)},
	}}
	if err := kube.Status().Update(ctx, cpp); err != nil {
		t.Fatal(err)
	}
	// Players play through every address from before the provider starts
	// until the switch is done.
	carryTraffic(t, s.VIP(), autoS.VIP())
	var players []*udpstream.Stream
	for i, p := range gs {
		players = append(players, startStream(t, p.Name, fmt.Sprintf("%s:%d", s.VIP(), 30000+i)))
	}
	players = append(players, startStream(t, auto.Name, autoS.VIP()+":30000"),
		startStream(t, moved.Name, fmt.Sprintf("%s:%d", s.VIP(), movedPort)))
	cloud.ResetCounters()
	startProvider(t)
	clearAtEnd(t, ns) // before the provider stops
	t.Cleanup(func() { _ = kube.Delete(context.Background(), cpp) })

	// The dry run.
	for i, p := range gs {
		podEventSaying(t, ns, p.Name, "TKEExtendSwitchDryRun", fmt.Sprintf("would keep: 7777/UDP in tke-port-pools/%s keeps port %d on %s", poolName, 30000+i, lbID))
	}
	podEventSaying(t, ns, auto.Name, "TKEExtendSwitchDryRun", fmt.Sprintf("would keep: 7777/UDP in tke-port-pools/%s keeps port 30000 on %s", poolName, autoID))
	podEventSaying(t, ns, forger.Name, "TKEExtendSwitchDryRun", "not the Pod's 10.31.0.99:7777 alone")
	podEventSaying(t, ns, moved.Name, "TKEExtendSwitchDryRun", "the result has no entry for port 7778 in pool "+poolName)
	podEventSaying(t, ns, fresh.Name, "TKEExtendSwitchDryRun", "would give a new address (not kept): 7777/UDP in tke-port-pools/"+poolName+": no "+podannotation.TKEAnnotationMappingResult)
	pp := &clbv1alpha1.PortPool{}
	if err := kube.Get(ctx, types.NamespacedName{Namespace: podannotation.TKEPoolNamespace, Name: poolName}, pp); err != nil {
		t.Fatal(err)
	}
	if st := pp.Status.AtProvider.LoadBalancers; len(st) != 2 || len(st[0].TKEListeners) != pods+1 || len(st[1].TKEListeners) != 1 || len(st[0].Adopted) != 0 {
		t.Errorf("the dry run's pool status %+v, want tke-extend's %d and 1 listeners listed, none taken over", st, pods+1)
	}
	for _, a := range tkestandin.SwitchWrites() {
		if n := cloud.CallCount(a); n > 0 {
			t.Errorf("the dry run called %s %d times", a, n)
		}
	}
	notTakenOverYet(t, autoID)
	pas := &v1alpha1.PodAddressList{}
	if err := kube.List(ctx, pas, client.InNamespace(ns)); err != nil || len(pas.Items) > 0 {
		t.Errorf("the dry run made %d PodAddresses (%v)", len(pas.Items), err)
	}
	for name, was := range before {
		now := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(was), now); err != nil {
			t.Fatal(err)
		}
		if now.ResourceVersion != was.ResourceVersion {
			t.Errorf("the dry run wrote Pod %s", name)
		}
	}

	// Every listener keeps its one target at every moment of the switch.
	stop := make(chan struct{})
	var lost []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			for i, r := range results {
				if got := cloudTargets(lbID, r.ListenerID); len(got) != 1 || got[0] != gsIP(i)+":7777" {
					lost = append(lost, fmt.Sprintf("%s: %v", gs[i].Name, got))
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	// The switch.
	if err := kube.Get(ctx, client.ObjectKeyFromObject(cpp), cpp); err != nil {
		t.Fatal(err)
	}
	delete(cpp.Annotations, clbv1alpha1.AnnotationTKESwitch)
	if err := kube.Update(ctx, cpp); err != nil {
		t.Fatal(err)
	}
	for i, p := range gs {
		pa := bound(t, ns, p.Name)
		if len(pa.Status.Bindings) != 1 {
			t.Fatalf("%s: bindings %+v", p.Name, pa.Status.Bindings)
		}
		b := pa.Status.Bindings[0]
		if b.LoadBalancerID != lbID || b.Port != int32(30000+i) || b.ListenerIDs["UDP"] != results[i].ListenerID { //nolint:gosec // G115: test ports.
			t.Errorf("%s: bound to %s:%d listener %v, want tke-extend's %s:%d listener %s", p.Name, b.LoadBalancerID, b.Port, b.ListenerIDs, lbID, 30000+i, results[i].ListenerID)
		}
		podAnnotation(t, p, podannotation.TKEAnnotationMappingResult, before[p.Name].Annotations[podannotation.TKEAnnotationMappingResult])
	}
	if b := bound(t, ns, auto.Name).Status.Bindings[0]; b.LoadBalancerID != autoID || b.Port != 30000 || b.ListenerIDs["UDP"] != autoResult.ListenerID {
		t.Errorf("%s: bound to %s:%d listener %v, want tke-extend's %s:30000 listener %s", auto.Name, b.LoadBalancerID, b.Port, b.ListenerIDs, autoID, autoResult.ListenerID)
	}
	kept := map[string]bool{fmt.Sprintf("%s:%d", autoID, 30000): true, fmt.Sprintf("%s:%d", lbID, movedPort): true}
	for i := range pods {
		kept[fmt.Sprintf("%s:%d", lbID, 30000+i)] = true
	}
	fa := bound(t, ns, forger.Name)
	forgerSlot := fmt.Sprintf("%s:%d", fa.Status.Bindings[0].LoadBalancerID, fa.Status.Bindings[0].Port)
	if kept[forgerSlot] {
		t.Errorf("the forger was given %s, a port tke-extend gave another Pod", forgerSlot)
	}
	podWarning(t, ns, forger.Name, "TKEExtendAddressNotKept", "not the Pod's 10.31.0.99:7777 alone")
	podWarning(t, ns, moved.Name, "TKEExtendAddressNotKept", "the result has no entry for port 7778")
	late := pod(t, ns, "gs-late", "10.31.0.50", annotations, gamePort)
	for _, p := range []*corev1.Pod{late, fresh, moved} {
		if b := bound(t, ns, p.Name).Status.Bindings[0]; kept[fmt.Sprintf("%s:%d", b.LoadBalancerID, b.Port)] || fmt.Sprintf("%s:%d", b.LoadBalancerID, b.Port) == forgerSlot {
			t.Errorf("%s, with no tke-extend result, got %s:%d, a port already held", p.Name, b.LoadBalancerID, b.Port)
		}
	}
	eventually(t, "the pool takes tke-extend's listeners over", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		st := pp.Status.AtProvider.LoadBalancers
		if len(st) != 2 || len(st[0].Adopted) != pods+1 || len(st[0].TKEListeners) != 0 || len(st[1].Adopted) != 1 || len(st[1].TKEListeners) != 0 {
			return errors.Errorf("load balancers %+v", st)
		}
		// gs-moved's listener, still forwarding to it, alone inherited.
		if in := st[0].Inherited; len(in) != 1 || in[0].ID != movedResult.ListenerID || len(in[0].Targets) != 1 || in[0].Targets[0] != movedIP+":7777" || len(st[1].Inherited) != 0 {
			return errors.Errorf("inherited %+v and %+v, want %s alone, forwarding to %s:7777", st[0].Inherited, st[1].Inherited, movedResult.ListenerID, movedIP)
		}
		return nil
	})
	takenOver(t, pp, cpp, autoID)
	close(stop)
	wg.Wait()
	for _, pl := range players {
		sent, answered, wrong := pl.Finish()
		t.Logf("%s: %d packets sent, %d answered, %d answered by another server", pl, sent, answered, wrong)
		if answered != sent || wrong > 0 || sent < 100 {
			t.Errorf("%s: %d of %d packets lost, %d answered by another server", pl, sent-answered, sent, wrong)
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d moments with a listener of tke-extend not forwarding to its Pod alone, e.g. %s", len(lost), strings.Join(lost[:min(3, len(lost))], "; "))
	}
	for _, a := range tkestandin.Removals() {
		if n := cloud.CallCount(a); n > 0 {
			t.Errorf("the switch called %s %d times", a, n)
		}
	}
	for i, r := range results {
		if got := cloudTargets(lbID, r.ListenerID); len(got) != 1 || got[0] != gsIP(i)+":7777" {
			t.Errorf("%s's listener %s forwards to %v", gs[i].Name, r.ListenerID, got)
		}
	}

	// gs-moved goes: the pool deregisters the target tke-extend left for
	// it, and its slot is free; the listener stays the pool's.
	deletePod(t, moved)
	eventually(t, "the pool deregisters what tke-extend left for gs-moved", func() error {
		if got := cloudTargets(lbID, movedResult.ListenerID); len(got) > 0 {
			return errors.Errorf("%s forwards to %v", movedResult.ListenerID, got)
		}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		st := pp.Status.AtProvider.LoadBalancers
		if len(st) != 2 || len(st[0].Inherited) != 0 || st[0].Adopted[fmt.Sprintf("UDP/%d", movedPort)] != movedResult.ListenerID {
			return errors.Errorf("load balancers %+v", st)
		}
		return nil
	})
	noTKEListenerUnowned(t, pp, lbID, autoID)
}

// gs-moved, bound by tke-extend on movedPort, asks for another port at the
// switch.
const (
	movedIP   = "127.31.0.30"
	movedPort = 30006
)

// noTKEListenerUnowned: every listener named TKE-LISTENER on the load
// balancers is one the pool took over (in its status' adopted).
func noTKEListenerUnowned(t *testing.T, pp *clbv1alpha1.PortPool, lbs ...string) {
	t.Helper()
	owned := map[string]bool{}
	for _, st := range pp.Status.AtProvider.LoadBalancers {
		for _, id := range st.Adopted {
			owned[id] = true
		}
	}
	for _, id := range lbs {
		lb, ok := cloud.Inventory().LoadBalancer(id)
		if !ok {
			t.Fatalf("load balancer %s not found", id)
		}
		for _, l := range lb.Listeners {
			if l.Name == clbv1alpha1.TKEListenerName && !owned[l.ID] {
				t.Errorf("tke-extend's listener %s (%s %d on %s) is not the pool's", l.ID, l.Protocol, l.Port, id)
			}
		}
	}
}

// gsIP is the loopback Pod IP of gs-i; autoIP the one of gs-auto.
func gsIP(i int) string { return fmt.Sprintf("127.31.0.%d", i+1) }

const autoIP = "127.31.0.40"

// podEventSaying waits for an Event of reason on Pod podName whose message
// contains text.
func podEventSaying(t *testing.T, ns, podName, reason, text string) {
	t.Helper()
	eventually(t, "a "+reason+" event on "+podName, func() error {
		l := &corev1.EventList{}
		if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for _, e := range l.Items {
			if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == podName && e.Reason == reason {
				if strings.Contains(e.Message, text) {
					return nil
				}
				seen = append(seen, e.Message)
			}
		}
		return errors.Errorf("none among %q", seen)
	})
}
