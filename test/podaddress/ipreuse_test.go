package podaddress

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// target is one load balancer target as a PodAddress records it.
type target struct {
	listenerID string
	ip         string
	port       int32
}

// targetsOf lists the targets recorded by a PodAddress's bindings.
func targetsOf(pa *v1alpha1.PodAddress) []target {
	var out []target
	for _, b := range pa.Status.Bindings {
		for _, id := range b.ListenerIDs {
			out = append(out, target{listenerID: id, ip: b.TargetIP, port: b.TargetPort})
		}
	}
	return out
}

// reuseWatch samples the PodAddresses of a namespace and remembers every
// moment at which the rules of Pod IP reuse were broken.
type reuseWatch struct {
	mu         sync.Mutex
	violations []string
	samples    int
}

func (w *reuseWatch) fail(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.violations) < 20 {
		w.violations = append(w.violations, fmt.Sprintf(format, args...))
	}
}

// check looks at one consistent list of PodAddresses: no target may be
// recorded by two of them, and while old exists (its targets not yet
// deregistered) new may not record a listener old holds.
func (w *reuseWatch) check(items []v1alpha1.PodAddress, old, young string) {
	w.mu.Lock()
	w.samples++
	w.mu.Unlock()
	owner := map[target]string{}
	var oldListeners, youngListeners []string
	for i := range items {
		pa := &items[i]
		for _, tg := range targetsOf(pa) {
			if o, ok := owner[tg]; ok && o != pa.Name {
				w.fail("target %+v recorded by both %s and %s", tg, o, pa.Name)
			}
			owner[tg] = pa.Name
			switch pa.Name {
			case old:
				oldListeners = append(oldListeners, tg.listenerID)
			case young:
				youngListeners = append(youngListeners, tg.listenerID)
			}
		}
	}
	for _, id := range youngListeners {
		if slices.Contains(oldListeners, id) {
			w.fail("%s holds listener %s while %s still has its target there", young, id, old)
		}
	}
}

// TestPodIPReuse gives a new Pod the IP of a deleted Pod whose target
// cannot be deregistered yet, in a pool of a single port: the new Pod must
// wait for that port and never share a target with the old one, and in
// the end exactly its own target is registered.
func TestPodIPReuse(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	// One port: the only slot the new Pod can get is the old Pod's.
	pool(t, ns, "pool1", []string{"lb"}, 31300, 31300)
	const ip = "10.9.0.7"
	ask := map[string]string{bcsEnabled: "true", bcsPorts: "pool1 TCP 7777"}

	a := pod(t, ns, "old", ip, ask)
	paA := bound(t, ns, "old")
	if len(paA.Status.Bindings) != 1 {
		t.Fatalf("old: %d bindings, want 1", len(paA.Status.Bindings))
	}
	listenerID := paA.Status.Bindings[0].ListenerIDs["TCP"]
	want := []string{ip + ":7777"}
	if got := cloudTargets(lbID(l), listenerID); !slices.Equal(got, want) {
		t.Fatalf("listener %s targets %v, want %v", listenerID, got, want)
	}

	// Watch every PodAddress of the namespace from here to the end.
	w := &reuseWatch{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			list := &v1alpha1.PodAddressList{}
			if err := kube.List(ctx, list, client.InNamespace(ns)); err == nil {
				w.check(list.Items, "old", "new")
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	stopWatch := func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	// Reported even when the test stops early, since the violations say
	// what went wrong first.
	t.Cleanup(func() {
		stopWatch()
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, v := range w.violations {
			t.Error(v)
		}
		t.Logf("%d samples of the PodAddresses, %d violations", w.samples, len(w.violations))
	})

	// The cloud refuses every deregistration until told otherwise.
	deregs := cloud.CallCount("BatchDeregisterTargets")
	if err := cloud.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{{Action: "BatchDeregisterTargets", Code: "InternalError"}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cloud.SetFaults(emulator.Faults{}) })

	deletePod(t, a)
	b := pod(t, ns, "new", ip, ask)

	// Old's deregistration has failed at least twice, so it has been
	// retried, and old's PodAddress is still there holding the port; new
	// waits for one.
	eventually(t, "old's deregistration refused and new waiting", func() error {
		if n := cloud.CallCount("BatchDeregisterTargets") - deregs; n < 2 {
			return errors.Errorf("%d BatchDeregisterTargets calls since old was deleted", n)
		}
		old := &v1alpha1.PodAddress{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "old"}, old); err != nil {
			return errors.Wrap(err, "old's PodAddress")
		}
		if old.DeletionTimestamp == nil {
			return errors.New("old's PodAddress is not being deleted")
		}
		pb := &v1alpha1.PodAddress{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "new"}, pb); err != nil {
			return errors.Wrap(err, "new's PodAddress")
		}
		if pb.Status.State != v1alpha1.StateNoPortAvailable {
			return errors.Errorf("new is %q (%s), want %s", pb.Status.State, pb.Status.Message, v1alpha1.StateNoPortAvailable)
		}
		return nil
	})
	if got := cloudTargets(lbID(l), listenerID); !slices.Equal(got, want) {
		t.Errorf("while old's deregistration fails, listener %s targets %v, want %v (old's)", listenerID, got, want)
	}

	// The cloud recovers: old's target goes, then new gets the port and
	// registers its own.
	if err := cloud.SetFaults(emulator.Faults{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "old's PodAddress gone", func() error {
		err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "old"}, &v1alpha1.PodAddress{})
		if err == nil {
			return errors.New("still there")
		}
		return client.IgnoreNotFound(err)
	})
	paB := bound(t, ns, b.Name)
	if len(paB.Status.Bindings) != 1 || paB.Status.Bindings[0].ListenerIDs["TCP"] != listenerID || paB.Status.Bindings[0].TargetIP != ip {
		t.Fatalf("new's bindings %+v, want one on listener %s to %s", paB.Status.Bindings, listenerID, ip)
	}
	// Exactly new's target is registered: old's deregistration, finished
	// before new registered, did not take new's target away.
	eventually(t, "new's target registered", func() error {
		if got := cloudTargets(lbID(l), listenerID); !slices.Equal(got, want) {
			return errors.Errorf("listener %s targets %v, want %v", listenerID, got, want)
		}
		return nil
	})

	stopWatch()
	if w.samples < 10 {
		t.Errorf("only %d samples of the PodAddresses were taken", w.samples)
	}
}

// TestPodIPReuseSameName recreates a Pod of the same name and IP (a
// StatefulSet Pod) while the old one's target cannot be deregistered yet:
// the new Pod takes over the PodAddress, and once the cloud recovers its
// own target is registered and stays, not removed by the old Pod's late
// deregistration.
func TestPodIPReuseSameName(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool", []string{"lb"}, 31310, 31310)
	const ip = "10.9.0.8"
	ann := map[string]string{ourPorts: "game pool", keep: "1h"}

	a := pod(t, ns, "web-0", ip, ann)
	paA := bound(t, ns, "web-0")
	listenerID := paA.Status.Bindings[0].ListenerIDs["TCP"]
	want := []string{ip + ":7777"}
	if got := cloudTargets(lbID(l), listenerID); !slices.Equal(got, want) {
		t.Fatalf("listener %s targets %v, want %v", listenerID, got, want)
	}

	deregs := cloud.CallCount("BatchDeregisterTargets")
	if err := cloud.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{{Action: "BatchDeregisterTargets", Code: "InternalError"}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cloud.SetFaults(emulator.Faults{}) })
	deletePod(t, a)
	eventually(t, "old's deregistration refused twice", func() error {
		if n := cloud.CallCount("BatchDeregisterTargets") - deregs; n < 2 {
			return errors.Errorf("%d BatchDeregisterTargets calls since web-0 was deleted", n)
		}
		return nil
	})
	b := pod(t, ns, "web-0", ip, ann)
	eventually(t, "web-0's PodAddress taken over", func() error {
		pa := &v1alpha1.PodAddress{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web-0"}, pa); err != nil {
			return err
		}
		if pa.Spec.PodUID != string(b.UID) {
			return errors.Errorf("PodAddress is for Pod %s, want %s", pa.Spec.PodUID, b.UID)
		}
		return nil
	})

	if err := cloud.SetFaults(emulator.Faults{}); err != nil {
		t.Fatal(err)
	}
	// Bound for the new Pod with the one port, and the cloud has its
	// target once no deregistration is left to run.
	eventually(t, "web-0 Bound for the new Pod with its target registered", func() error {
		pa := &v1alpha1.PodAddress{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web-0"}, pa); err != nil {
			return err
		}
		if pa.Spec.PodUID != string(b.UID) || pa.Status.State != v1alpha1.StateBound {
			return errors.Errorf("PodAddress for %s is %q (%s)", pa.Spec.PodUID, pa.Status.State, pa.Status.Message)
		}
		if len(pa.Status.Bindings) != 1 || pa.Status.Bindings[0].ListenerIDs["TCP"] != listenerID {
			return errors.Errorf("bindings %+v, want one on listener %s", pa.Status.Bindings, listenerID)
		}
		if got := cloudTargets(lbID(l), listenerID); !slices.Equal(got, want) {
			return errors.Errorf("listener %s targets %v, want %v", listenerID, got, want)
		}
		return nil
	})
	// A deregistration left over from the old Pod (a retry, a queued
	// batch) would run soon after the cloud recovers: the target must
	// stay while the provider's target calls stand still for 2 s, longer
	// than its batch window and its retry backoff at this point.
	var last map[string]int
	var still time.Time
	eventually(t, "target stays with no target calls for 2 s", func() error {
		now := map[string]int{
			"BatchDeregisterTargets": cloud.CallCount("BatchDeregisterTargets"),
			"BatchRegisterTargets":   cloud.CallCount("BatchRegisterTargets"),
		}
		if got := cloudTargets(lbID(l), listenerID); !slices.Equal(got, want) {
			t.Fatalf("listener %s targets %v, want %v: the new Pod's target was removed", listenerID, got, want)
		}
		if !maps.Equal(last, now) {
			last, still = now, time.Now()
		}
		if d := time.Since(still); d < 2*time.Second {
			return errors.Errorf("target calls stood still for %s only", d)
		}
		return nil
	})
}
