package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// killsPerPhase is how many times the provider is killed while Pods
// scale up, and again while they scale down.
const killsPerPhase = 3

// slotsPerLB is the ports of the pool per load balancer (listener quota
// 100, TCP only).
const slotsPerLB = 100

// A crasher kills the provider process and starts a fresh one.
type crasher struct {
	t     *testing.T
	p     *testenv.Provider
	kills int
}

func (c *crasher) killAndRestart(why string) {
	c.p.Kill()
	c.kills++
	c.t.Logf("kill %d: provider SIGKILLed %s", c.kills, why)
	c.p = startProvider(c.t, fmt.Sprintf("after-kill-%d", c.kills))
}

// killAtProgress kills the provider (and starts a new one) once each time
// progress() passes one of killsPerPhase random fractions of n: random
// moments of the phase, yet while it has work left (a kill due once all n
// are done is not made). It returns when every kill was made, or when done
// is closed.
func (c *crasher) killAtProgress(rng *rand.Rand, phase string, n int, progress func() int, done <-chan struct{}) {
	var at []int
	for range killsPerPhase {
		at = append(at, 1+rng.IntN(n*9/10)) // never at 100 %: nothing would be left to do
	}
	slices.Sort(at)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	last := 0
	for _, threshold := range at {
		// Each new provider makes progress before it is killed in turn.
		threshold = max(threshold, last+1)
		for {
			p := progress()
			if p >= n {
				return
			}
			if p >= threshold {
				c.killAndRestart(fmt.Sprintf("while %s, at %d of %d Pods", phase, p, n))
				last = p
				break
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}
}

// TestCrashWhileScaling scales Pods 0 → pods → 0, cycles times, while the
// provider process is SIGKILLed at random moments of every phase and a
// fresh one started. After each phase the emulator's inventory must be
// exactly what should exist (the pool's load balancers and listeners, one
// target per bound address when up, none when down), no address may be
// held by two Pods, every Pod must be Bound when up and nothing left when
// down.
func TestCrashWhileScaling(t *testing.T) {
	n := *pods
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 11)) //nolint:gosec // a test's schedule, not a secret
	t.Logf("seed %d, %d cycles of %d Pods, %d kills per phase", seed, *cycles, n, killsPerPhase)

	ns := namespace(t)
	emu, ref := startCloud(t, ns, slotsPerLB)
	c := &crasher{t: t, p: startProvider(t, "first")}
	nLBs := (n + slotsPerLB - 1) / slotsPerLB
	names, _ := lbs(t, ns, nLBs, ref)
	pool(t, ns, "crash", ref, names, 41000, 41000+slotsPerLB-1, []string{"TCP"})
	base := shapeOf(emu)
	if len(base.lbs) != nLBs || len(base.listeners) != nLBs*slotsPerLB || len(base.targets) != 0 {
		t.Fatalf("the cloud before the first cycle: %d load balancers, %d listeners, %d targets; want %d, %d, 0",
			len(base.lbs), len(base.listeners), len(base.targets), nLBs, nLBs*slotsPerLB)
	}

	var leaks, dups int
	start := time.Now()
	for cycle := 1; cycle <= *cycles; cycle++ {
		// Up: every Pod Bound, each address once, the cloud exactly so.
		up := time.Now()
		done := make(chan struct{})
		var chaos sync.WaitGroup
		chaos.Go(func() {
			c.killAtProgress(rng, "scaling up", n, func() int { return countBound(ns) }, done)
		})
		createPods(t, ns, "crash", n)
		err := eventuallyErr(func() error { return allBound(ns, n) })
		close(done)
		chaos.Wait()
		if err != nil {
			t.Fatalf("cycle %d: not every Pod Bound: %v", cycle, err)
		}
		pas, err := podAddresses(ns)
		if err != nil {
			t.Fatal(err)
		}
		d := duplicates(pas)
		dups += len(d)
		for _, x := range d {
			t.Errorf("cycle %d: %s", cycle, x)
		}
		l := matches(t, ns, emu, base)
		leaks += len(l)
		t.Logf("cycle %d up: %d Pods Bound in %s; %d kills so far; %d leaked, %d duplicate addresses",
			cycle, n, time.Since(up).Round(time.Millisecond), c.kills, len(l), len(d))

		// Down: nothing left but the pool.
		down := time.Now()
		done = make(chan struct{})
		chaos.Go(func() {
			c.killAtProgress(rng, "scaling down", n, func() int {
				pas, err := podAddresses(ns)
				if err != nil {
					return 0
				}
				return n - len(pas)
			}, done)
		})
		if err := kube.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		err = eventuallyErr(func() error {
			pas, err := podAddresses(ns)
			if err != nil {
				return err
			}
			if len(pas) != 0 {
				return errors.Errorf("%d PodAddresses left", len(pas))
			}
			return podsGone(ns)
		})
		close(done)
		chaos.Wait()
		if err != nil {
			t.Fatalf("cycle %d: scaling down: %v", cycle, err)
		}
		l = matches(t, ns, emu, base)
		leaks += len(l)
		poolFree(t, ns, "crash")
		t.Logf("cycle %d down: all %d PodAddresses gone in %s; %d kills so far; %d leaked",
			cycle, n, time.Since(down).Round(time.Millisecond), c.kills, len(l))
	}
	t.Logf("SUMMARY crashes: cycles=%d pods=%d kills=%d leaks=%d duplicates=%d in %s",
		*cycles, n, c.kills, leaks, dups, time.Since(start).Round(time.Second))
}

// createPods creates Pods gs-000… with port 7777 from pool "from" and
// gives each an IP, 8 at a time.
func createPods(t *testing.T, ns, from string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				p := gamePod(ns, i, from)
				if err := testenv.RunPod(ctx, kube, p, fmt.Sprintf("10.70.%d.%d", i/250, i%250+1), wait); err != nil {
					errs <- errors.Wrapf(err, "Pod %s", p.Name)
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func podsGone(ns string) error {
	l := &corev1.PodList{}
	if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		return err
	}
	if len(l.Items) != 0 {
		return errors.Errorf("%d Pods left", len(l.Items))
	}
	return nil
}

// poolFree waits until the PortPool counts no allocated slot and no
// binding.
func poolFree(t *testing.T, ns, name string) {
	t.Helper()
	pp := &clbv1alpha1.PortPool{}
	eventually(t, "PortPool "+name+" with every slot free", func() error {
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pp); err != nil {
			return err
		}
		if a := pp.Status.AtProvider; a.Allocated != 0 || a.Bindings != 0 {
			return errors.Errorf("allocated %d, bindings %d, free %d", a.Allocated, a.Bindings, a.Free)
		}
		return nil
	})
}
