package podaddress

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// TestRegistrationCallsScaleWithBatches registers 300 Pods (a quarter with
// a TCP_UDP port, so 375 targets) on a pool of 2 load balancers and counts
// the BatchRegisterTargets calls: O(targets / 500) per load balancer, not
// one per Pod, and never a storm.
//
// The Pods are created without an IP and allocated first (allocation makes
// no cloud call); then all get their IPs at once, as a scale-up's Pods
// start. The client gathers the registrations of a load balancer for one
// batch window and sends them in calls of up to 500 targets, so each load
// balancer gets ceil(targets/500) calls per window that registrations
// arrive in. The test uses a 2 s window (the provider's flag
// --target-batch-window) and counts the windows from the first IP set
// until every Pod was Bound (registrations arrive within that time), so
// the bound is LBs × ceil(targets/500) × (windows spanned + 1): a few
// calls, where one call per Pod would be 300 and the old storm thousands.
func TestRegistrationCallsScaleWithBatches(t *testing.T) {
	const pods, lbs = 300, 2
	const window = 2 * time.Second
	startProvider(t, suite.Workers(32), suite.Clients(clb.Options{TargetBatchWindow: window}))
	ns := namespace(t)
	emu, ref := ownCloud(t, ns, func(c *emulator.Config) { c.ListenerQuota = 300 })
	names := lbsOn(t, ns, lbs, ref)
	pool(t, ns, "calls", names, 42000, 42149, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.ProviderConfigReference = ref
		pp.Spec.ForProvider.Protocols = []string{"TCP", "UDP"}
	})

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	created := make([]*corev1.Pod, pods)
	parallelDo(t, pods, func(i int) error {
		p, err := churnPod(ctx, ns, fmt.Sprintf("gs-%03d", i), "calls", "", i%4 == 0)
		created[i] = p
		return err
	})
	eventually(t, "every Pod allocated, waiting for its IP", func() error {
		l := &v1alpha1.PodAddressList{}
		if err := kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
		n := 0
		for _, pa := range l.Items {
			if pa.Status.State == v1alpha1.StateWaitBackend {
				n++
			}
		}
		if n != pods {
			return errors.Errorf("%d of %d waiting for their IP: %s", n, pods, notBound(t, ns))
		}
		return nil
	})
	t.Logf("calls before the IPs were set (load balancers, listeners, allocation): %v", emu.Calls())
	emu.ResetCounters()

	start := time.Now()
	parallelDo(t, pods, func(i int) error {
		return giveIP(ctx, created[i], fmt.Sprintf("10.70.%d.%d", i/250, i%250+1))
	})
	span := time.Since(start)
	eventually(t, "all Pods Bound", func() error {
		if n := countBound(t, ns); n != pods {
			return errors.Errorf("%d of %d Bound: %s", n, pods, notBound(t, ns))
		}
		return nil
	})
	bound := time.Since(start)

	calls := emu.Calls()
	var actions []string
	for a := range calls {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	for _, a := range actions {
		t.Logf("calls from the first IP set until all were Bound: %s %v", a, calls[a])
	}
	targets := len(targetsIn(emu))
	windows := int(bound/window) + 2 // a span of less than one window can still straddle two
	limit := lbs * ((targets + 499) / 500) * windows
	got := emu.CallCount("BatchRegisterTargets")
	t.Logf("%d Pods, %d targets: IPs set in %s, all Bound after %s; %d BatchRegisterTargets calls (bound %d = %d load balancers × ceil(%d/500) × %d windows of %s)",
		pods, targets, span.Round(time.Millisecond), bound.Round(time.Millisecond), got, limit, lbs, targets, windows, window)
	if targets != pods+pods/4 {
		t.Errorf("%d targets in the cloud, want %d (one per Pod, two for TCP_UDP)", targets, pods+pods/4)
	}
	if got > limit {
		t.Errorf("%d BatchRegisterTargets calls, want at most %d", got, limit)
	}
	if n := emu.CallCount("RegisterTargets"); n != 0 {
		t.Errorf("%d single RegisterTargets calls", n)
	}
}

// TestDeleteCallsPerLoadBalancer binds 200 Pods on a pool of 4 load
// balancers, deletes them all at once and counts the cloud calls until
// every PodAddress is gone: describes are a few per load balancer (the
// poll and the PortPool's own reconciles), not one per deleted Pod, and
// deregistrations ride in batches: while deletions keep coming, about one
// BatchDeregisterTargets per load balancer per --target-batch-max-wait.
func TestDeleteCallsPerLoadBalancer(t *testing.T) {
	const pods, lbs = 200, 4
	startProvider(t, suite.Workers(32))
	ns, emu := ownPool(t, "del", lbs, 43000, 43099)

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	created := make([]*corev1.Pod, pods)
	parallelDo(t, pods, func(i int) error {
		p, err := churnPod(ctx, ns, fmt.Sprintf("gs-%03d", i), "del", fmt.Sprintf("10.71.%d.%d", i/250, i%250+1), false)
		created[i] = p
		return err
	})
	eventually(t, "all Pods Bound", func() error {
		if n := countBound(t, ns); n != pods {
			return errors.Errorf("%d of %d Bound: %s", n, pods, notBound(t, ns))
		}
		return nil
	})
	emu.ResetCounters()

	start := time.Now()
	parallelDo(t, pods, func(i int) error {
		return client.IgnoreNotFound(kube.Delete(ctx, created[i], client.GracePeriodSeconds(0)))
	})
	eventually(t, "every PodAddress gone", func() error {
		l := &v1alpha1.PodAddressList{}
		if err := kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(l.Items) != 0 {
			return errors.Errorf("%d PodAddresses left", len(l.Items))
		}
		return nil
	})
	took := time.Since(start)
	if left := targetsIn(emu); len(left) != 0 {
		t.Errorf("%d targets left after every PodAddress was deleted, e.g. %s", len(left), left[0])
	}
	t.Logf("deleting %d Pods on %d load balancers took %s; calls: %v", pods, lbs, took.Round(time.Millisecond), emu.Calls())

	// The managed resources' own polls (every 5 s here) describe each
	// load balancer and the pool's listeners once per poll; allow that,
	// plus a few reconciles, per load balancer.
	polls := int(took/(5*time.Second)) + 2
	for _, action := range []string{"DescribeListeners", "DescribeLoadBalancers", "DescribeTargets"} {
		if got, limit := emu.CallCount(action), 3*lbs*polls; got > limit {
			t.Errorf("%d %s calls deleting %d Pods, want at most %d (a few per load balancer per poll)", got, action, pods, limit)
		}
	}
	got := emu.CallCount("BatchDeregisterTargets")
	limit := lbs * (int(took/clb.DefaultTargetBatchMaxWait) + 2)
	t.Logf("%d BatchDeregisterTargets calls: %.3f per Pod (bound %d = %d load balancers × (%s / %s + 2))",
		got, float64(got)/pods, limit, lbs, took.Round(time.Millisecond), clb.DefaultTargetBatchMaxWait)
	if got > limit {
		t.Errorf("%d BatchDeregisterTargets calls for %d Pods, want at most %d", got, pods, limit)
	}
}

// TestNaiveModeCallsPerPod: with --cloud-call-mode=naive every Pod's
// registration is its own BatchRegisterTargets call, waited for inline
// (DescribeTaskStatus), which is what the benchmark compares the batched
// mode with.
func TestNaiveModeCallsPerPod(t *testing.T) {
	const pods = 40
	startProvider(t, suite.Workers(32), suite.Clients(clb.Options{CallMode: clb.CallsNaive}))
	ns, emu := ownPool(t, "naive", 2, 44000, 44049)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	eventually(t, "the pool Ready", func() error {
		pp := &clbv1alpha1.PortPool{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "naive"}, pp); err != nil {
			return err
		}
		if pp.Status.AtProvider.Free < pods {
			return errors.Errorf("%d free slots", pp.Status.AtProvider.Free)
		}
		return nil
	})
	emu.ResetCounters()
	parallelDo(t, pods, func(i int) error {
		_, err := churnPod(ctx, ns, fmt.Sprintf("gs-%03d", i), "naive", fmt.Sprintf("10.72.0.%d", i+1), false)
		return err
	})
	eventually(t, "all Pods Bound", func() error {
		if n := countBound(t, ns); n != pods {
			return errors.Errorf("%d of %d Bound: %s", n, pods, notBound(t, ns))
		}
		return nil
	})
	t.Logf("naive mode, %d Pods: %v", pods, emu.Calls())
	// A reconcile that runs again before its status write lands (a
	// conflict) registers once more, as a naive controller does; the API's
	// own throttling answers are not counted.
	if got := emu.Calls()["BatchRegisterTargets"]["OK"]; got < pods || got > pods+pods/10 {
		t.Errorf("%d BatchRegisterTargets calls answered for %d Pods, want one per Pod (up to 10%% more)", got, pods)
	}
	if got := emu.CallCount("DescribeTaskStatus"); got < pods {
		t.Errorf("%d DescribeTaskStatus calls for %d Pods, want at least one per Pod (the task waited inline)", got, pods)
	}
	if n := len(targetsIn(emu)); n != pods {
		t.Errorf("%d targets in the cloud, want %d", n, pods)
	}
}

// ownPool makes a namespace with its own emulated cloud, lbs load balancers
// there and a TCP PortPool name over ports start-end of them.
func ownPool(t *testing.T, name string, lbs int, start, end int64) (string, *emulator.Emulator) {
	t.Helper()
	ns := namespace(t)
	emu, ref := ownCloud(t, ns, func(c *emulator.Config) { c.ListenerQuota = 300 })
	pool(t, ns, name, lbsOn(t, ns, lbs, ref), start, end, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.ProviderConfigReference = ref
	})
	return ns, emu
}

// parallelDo runs fn(0..n-1) on 16 workers and fails the test on any error.
func parallelDo(t *testing.T, n int, fn func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range work {
				if err := fn(i); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}
