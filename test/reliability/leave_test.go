package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// releaseWithin bounds how long the addresses of Pods deleted while the
// provider was down take to be released: from the new provider's start
// when the cloud works, from the faults' end when it failed. It took about
// 2 s on a shared 2-core machine (the provider's startup, or the retry of
// a failed deregistration about a second later, see targets.Binder, then
// one batch); the rest is margin for a busier one.
const releaseWithin = 30 * time.Second

// leavePods is how many Pods TestPodsLeaveWhileDown binds; a quarter
// leaves in each of its two rounds.
const leavePods = 40

// deregisterFaults is the cloud failing: every target deregistration
// fails (a third of them as a dropped connection), every registration
// too, and one call in ten of any action is throttled; one in five is
// held up to a second, so that a kill may land mid-call.
func deregisterFaults() emulator.Faults {
	return emulator.Faults{
		Rules: []emulator.FaultRule{
			{Action: "BatchDeregisterTargets", Drop: true, Rate: 0.3},
			{Action: "BatchDeregisterTargets", Code: "InternalError"},
			{Action: "BatchRegisterTargets", Code: "InternalError"},
			{Code: "RequestLimitExceeded", Rate: 0.1},
		},
		Delays: []emulator.FaultDelay{{Rate: 0.2, MinSeconds: 0.1, MaxSeconds: 1}},
	}
}

// TestPodsLeaveWhileDown binds leavePods Pods, then deletes Pods while the
// provider is SIGKILLed, in two rounds: a quarter with the cloud working,
// released by the next provider at its start; another quarter with every
// deregistration failing, a provider started, killed and started again
// under the faults, released once they end. Each round must, within
// releaseWithin, leave no PodAddress and no target of a deleted Pod, the
// other Pods with their exact addresses and targets, and the pool counting
// only their slots.
func TestPodsLeaveWhileDown(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 13)) //nolint:gosec // a test's choice of Pods, not a secret
	t.Logf("seed %d, %d Pods", seed, leavePods)

	ns := namespace(t)
	emu, ref := startCloud(t, ns, 100)
	p := startProvider(t, "first")
	names, _ := lbs(t, ns, 1, ref)
	pool(t, ns, "leave", ref, names, 45000, 45099, []string{"TCP"})
	base := shapeOf(emu)
	createPods(t, ns, "leave", leavePods)
	eventually(t, "every Pod Bound", func() error { return allBound(ns, leavePods) })
	if l := matches(t, ns, emu, base); len(l) != 0 || t.Failed() {
		t.Fatal("the cloud does not hold exactly the bound Pods' targets")
	}
	pas, err := podAddresses(ns)
	if err != nil {
		t.Fatal(err)
	}
	was := bindingsOf(pas)

	var order []string
	for name := range pas {
		order = append(order, name)
	}
	slices.Sort(order)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	q := leavePods / 4
	roundA, roundB, stay := order[:q], order[q:2*q], order[2*q:]

	// Round A: the provider is down, the cloud works.
	p.Kill()
	deletePods(t, ns, roundA)
	start := time.Now()
	p = startProvider(t, "after-kill-1")
	tookA := released(t, ns, emu, base, pas, roundA, order[q:], was, start)
	t.Logf("round A: %d Pods deleted while down, released %s after the provider started", len(roundA), tookA)

	// Round B: the provider is down, then the cloud fails; a provider
	// starts, fails to deregister, is killed and another starts, still
	// under faults.
	p.Kill()
	deletePods(t, ns, roundB)
	if err := emu.SetFaults(deregisterFaults()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.SetFaults(emulator.Faults{}) })
	failed := deregisterFailures(emu)
	p = startProvider(t, "under-faults-1")
	failedAtLeast(t, emu, failed+2)
	p.Kill()
	t.Logf("round B: provider SIGKILLed under faults after %d failed deregistrations", deregisterFailures(emu)-failed)
	// Nothing can be released while every deregistration fails.
	if pas, err := podAddresses(ns); err != nil || len(pas) != leavePods-len(roundA) {
		t.Fatalf("under faults: %d PodAddresses (%v), want %d: a finalizer let go of a registered target", len(pas), err, leavePods-len(roundA))
	}
	startProvider(t, "under-faults-2")
	failedAtLeast(t, emu, deregisterFailures(emu)+2)
	if err := emu.SetFaults(emulator.Faults{}); err != nil {
		t.Fatal(err)
	}
	cleared := time.Now()
	failures := deregisterFailures(emu) - failed
	t.Logf("round B: faults cleared after %d failed deregistrations in all (%v)", failures, emu.Calls()["BatchDeregisterTargets"])
	tookB := released(t, ns, emu, base, pas, slices.Concat(roundA, roundB), stay, was, cleared)
	t.Logf("round B: %d Pods deleted while down, released %s after the faults ended", len(roundB), tookB)
	t.Logf("SUMMARY pods leave while down: pods=%d deletedWhileDown=%d releasedAfterStart=%s deletedUnderFaults=%d failedDeregistrations=%d releasedAfterFaults=%s bound=%s",
		leavePods, len(roundA), tookA, len(roundB), failures, tookB, releaseWithin)
}

// deletePods deletes the named Pods while no provider runs, waits until
// the API server has removed them, and checks their PodAddresses are still
// there, finalizer and all: the release is the next provider's to do.
func deletePods(t *testing.T, ns string, names []string) {
	t.Helper()
	ctx := context.Background()
	for _, n := range names {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}
		if err := kube.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the deleted Pods gone", func() error {
		for _, n := range names {
			err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &corev1.Pod{})
			if err == nil {
				return errors.Errorf("Pod %s still there", n)
			}
			if !kerrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	})
	pas, err := podAddresses(ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		pa, ok := pas[n]
		if !ok || !slices.Contains(pa.Finalizers, podaddress.Finalizer) || pa.Status.State != v1alpha1.StateBound {
			t.Fatalf("PodAddress %s of a Pod deleted while the provider is down: present %v, finalizers %v, state %s; want it Bound with its finalizer",
				n, ok, pa.Finalizers, pa.Status.State)
		}
	}
}

// deregisterFailures counts the BatchDeregisterTargets calls the emulator
// failed.
func deregisterFailures(emu *emulator.Emulator) int {
	n := 0
	for code, c := range emu.Calls()["BatchDeregisterTargets"] {
		if code != "OK" {
			n += c
		}
	}
	return n
}

func failedAtLeast(t *testing.T, emu *emulator.Emulator, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d failed deregistrations", n), func() error {
		if got := deregisterFailures(emu); got < n {
			return errors.Errorf("%d so far", got)
		}
		return nil
	})
}

// released waits, at most releaseWithin from since, until no PodAddress
// and no target of the gone Pods is left (their bindings as in before),
// and the pool counts the slots of the stay Pods only; it returns how long
// the first took. The stay Pods must keep the bindings was recorded and
// the cloud hold exactly their targets.
func released(t *testing.T, ns string, emu *emulator.Emulator, base cloudShape, before map[string]v1alpha1.PodAddress,
	gone, stay []string, was map[string]string, since time.Time,
) time.Duration {
	t.Helper()
	goneIPs := map[string]string{}
	for _, n := range gone {
		for _, b := range before[n].Status.Bindings {
			goneIPs[b.TargetIP] = n
		}
	}
	deadline := since.Add(releaseWithin)
	poll := func(what string, fn func() error) {
		t.Helper()
		if err := testenv.Eventually(context.Background(), max(time.Until(deadline), 0), fn); err != nil {
			t.Fatalf("%s not within %s: %v", what, releaseWithin, err)
		}
	}
	poll("the deleted Pods' addresses released", func() error {
		pas, err := podAddresses(ns)
		if err != nil {
			return err
		}
		var left []string
		for _, n := range gone {
			if pa, ok := pas[n]; ok {
				left = append(left, fmt.Sprintf("%s %s", n, pa.Status.State))
			}
		}
		for _, lb := range emu.Inventory().LoadBalancers {
			for _, l := range lb.Listeners {
				for _, tg := range l.Targets {
					if n, ok := goneIPs[tg.IP]; ok {
						left = append(left, fmt.Sprintf("target %s:%d of %s on %s", tg.IP, tg.Port, n, l.ID))
					}
				}
			}
		}
		if len(left) != 0 {
			slices.Sort(left)
			return errors.Errorf("%d left: %v", len(left), first(left, 5))
		}
		return nil
	})
	took := time.Since(since).Round(100 * time.Millisecond)
	poll("the pool counting the remaining Pods only", func() error {
		pp := &clbv1alpha1.PortPool{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "leave"}, pp); err != nil {
			return err
		}
		if a := pp.Status.AtProvider; a.Allocated != int64(len(stay)) || a.Bindings != int64(len(stay)) {
			return errors.Errorf("allocated %d, bindings %d; want %d", a.Allocated, a.Bindings, len(stay))
		}
		return nil
	})

	// The rest must not have moved at all.
	pas, err := podAddresses(ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(pas) != len(stay) {
		t.Errorf("%d PodAddresses, want the %d of the remaining Pods", len(pas), len(stay))
	}
	if err := allBound(ns, len(stay)); err != nil {
		t.Error(err)
	}
	stayed := map[string]string{}
	for _, n := range stay {
		stayed[n] = was[n]
	}
	kept(t, stayed, pas, "the kills")
	if leaks, missing := diff(shapeOf(emu), base, expectedTargets(pas)); len(leaks)+len(missing) != 0 {
		t.Errorf("the cloud: %d leaked %v; %d missing %v", len(leaks), first(leaks, 5), len(missing), first(missing, 5))
	}
	return took
}
