package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// Leader election of the failover test: a lease of 8 s (the provider's
// default is 60 s, see docs/reliability.md), so that a killed leader's
// lease runs out well within the 15 s the takeover may take.
const (
	leaseDuration = 8 * time.Second
	takeoverLimit = 15 * time.Second
	failoverPods  = 60
)

// leaseHolder returns the identity holding the Lease, "" if none.
func leaseHolder(ns, name string) (string, error) {
	l := &coordinationv1.Lease{}
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, l); err != nil {
		return "", err
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

// TestLeaderFailover runs two provider replicas with leader election,
// SIGKILLs the leader while Pods are binding, and measures how long the
// other takes to hold the lease. It must take over within 15 s; no Pod
// bound before the kill may get another address, no address may be held
// twice, every Pod must end Bound and the cloud must hold exactly their
// targets.
func TestLeaderFailover(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	emu, ref := startCloud(t, ns, 100)
	const lease = "reliability-leader"
	flags := []string{"--leader-election", "--leader-election-namespace", ns, "--leader-election-id", lease,
		"--leader-election-lease-duration", leaseDuration.String(), "--leader-election-renew-deadline", (leaseDuration * 8 / 10).String()}

	leader := startProvider(t, "leader", flags...)
	var first string
	eventually(t, "the first replica holds the lease", func() error {
		h, err := leaseHolder(ns, lease)
		if err == nil && h == "" {
			err = errors.New("no holder")
		}
		first = h
		return err
	})
	standby := startProvider(t, "standby", flags...)
	if err := standby.Ready(ctx, wait); err != nil {
		t.Fatal(err)
	}
	if h, err := leaseHolder(ns, lease); err != nil || h != first {
		t.Fatalf("the lease moved to %q (%v) when the standby started", h, err)
	}

	names, _ := lbs(t, ns, 1, ref)
	pool(t, ns, "failover", ref, names, 44000, 44099, []string{"TCP"})
	base := shapeOf(emu)

	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				p := gamePod(ns, i, "failover")
				if err := testenv.RunPod(ctx, kube, p, fmt.Sprintf("10.72.0.%d", i+1), wait); err != nil {
					t.Error(err)
				}
			}
		})
	}
	go func() {
		for i := range failoverPods {
			work <- i
		}
		close(work)
	}()

	// Kill the leader once a random share of the Pods is Bound.
	at := 5 + rand.IntN(failoverPods/2) //nolint:gosec // a test's schedule
	eventually(t, fmt.Sprintf("%d Pods Bound by the leader", at), func() error {
		if n := countBound(ns); n < at {
			return errors.Errorf("%d Bound", n)
		}
		return nil
	})
	leader.Kill()
	killed := time.Now()
	// Nothing reconciles until the standby leads, so this is what the
	// leader left.
	pas, err := podAddresses(ns)
	if err != nil {
		t.Fatal(err)
	}
	was := map[string]string{}
	for name, b := range bindingsOf(pas) {
		if pas[name].Status.State == v1alpha1.StateBound {
			was[name] = b
		}
	}
	t.Logf("leader SIGKILLed with %d of %d Pods Bound", len(was), failoverPods)

	var second string
	if err := testenv.Eventually(ctx, 2*takeoverLimit, func() error {
		h, err := leaseHolder(ns, lease)
		if err == nil && (h == "" || h == first) {
			err = errors.Errorf("still held by %q", h)
		}
		second = h
		return err
	}); err != nil {
		t.Fatalf("the standby never took over: %v", err)
	}
	takeover := time.Since(killed)
	if takeover > takeoverLimit {
		t.Errorf("the standby took over %s after the leader was killed, want at most %s", takeover.Round(time.Millisecond), takeoverLimit)
	}
	wg.Wait()
	eventually(t, "every Pod Bound after the failover", func() error { return allBound(ns, failoverPods) })
	converged := time.Since(killed)

	if pas, err = podAddresses(ns); err != nil {
		t.Fatal(err)
	}
	moved, dups := kept(t, was, pas, "the failover")
	leaks := matches(t, ns, emu, base)
	t.Logf("SUMMARY leader failover: pods=%d boundAtKill=%d takeover=%s (lease %s, limit %s) allBound=%s reallocated=%d duplicates=%d leaks=%d (new holder %s)",
		failoverPods, len(was), takeover.Round(time.Millisecond), leaseDuration, takeoverLimit, converged.Round(time.Millisecond), moved, len(dups), len(leaks), second)
}
