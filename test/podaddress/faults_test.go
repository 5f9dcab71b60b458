package podaddress

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// faultPhaseTimeout bounds one scale phase under faults. It is a bound
// for "converges at all", not the performance goal (at most 2× the
// fault-free time), which the test prints: a timed assertion would flake on
// a busy machine.
const faultPhaseTimeout = 150 * time.Second

// cloudFaults is the fault mix of TestScaleUnderFaults: one call in ten
// fails (InternalError, RequestLimitExceeded, a dropped connection, and for
// writes ResourceInOperating, in equal parts), one in ten is held 0.2-2 s,
// and one asynchronous task in ten fails.
func cloudFaults() emulator.Faults {
	return emulator.Faults{
		Rules: []emulator.FaultRule{
			{Code: "InternalError", Rate: 0.025},
			{Code: "RequestLimitExceeded", Rate: 0.025},
			{Drop: true, Rate: 0.025},
		},
		BusyStorm:       &emulator.BusyStorm{Rate: 0.025},
		Delays:          []emulator.FaultDelay{{Rate: 0.1, MinSeconds: 0.2, MaxSeconds: 2}},
		TaskFailureRate: 0.1,
	}
}

// TestScaleUnderFaults scales 150 Pods up and down without faults, then
// again under cloudFaults with one emulator restart from its state file
// half-way through the scale-up, while the pool grows (listener creation
// tasks, some of which fail). Both runs must converge: every Pod Bound
// with its target in the cloud when up; no PodAddress, no target and no
// allocated port when down. It prints the convergence times, their ratio
// and the faults injected.
//
// FAULTS_PODS=n runs it with n Pods instead (the long variant).
func TestScaleUnderFaults(t *testing.T) {
	pods := 150
	if n, err := strconv.Atoi(os.Getenv("FAULTS_PODS")); err == nil && n > 0 {
		pods = n
	}
	lbs := pods/50 + 1 // 50 ports each, and room to spare
	startProvider(t)
	ns := namespace(t)

	cfg := emulator.DefaultConfig()
	cfg.TaskDuration = 20 * time.Millisecond
	cfg.OpenLBQuota = max(cfg.OpenLBQuota, lbs)
	cfg.ListenerQuota = 60
	cfg.StateFile = filepath.Join(t.TempDir(), "cloud.json")
	first, endpoint, err := emulator.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cl := &restartable{emu: first}
	t.Cleanup(func() { _ = cl.current().Close() })
	if err := testenv.ApplyTeamProviderConfig(context.Background(), kube, ns, endpoint); err != nil {
		t.Fatal(err)
	}
	ref := &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "team-a"}
	pool(t, ns, "faults", lbsOn(t, ns, lbs, ref), 44000, 44049, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.ProviderConfigReference = ref
	})

	cleanUp, cleanDown := scaleUpDown(t, ns, "faults", "clean", pods, cl, nil)
	t.Logf("fault-free: %d Pods Bound in %s, all gone in %s", pods, cleanUp.Round(time.Millisecond), cleanDown.Round(time.Millisecond))

	// The pool grows by 5 ports while the Pods scale, so that listeners
	// are created (asynchronous tasks) under the faults. Target changes
	// start no task, so one in ten tasks failing might fail none here: the
	// first listener task is made to fail for sure, then the mix applies.
	cl.current().ResetCounters()
	firstTaskFails := cloudFaults()
	firstTaskFails.TaskFailureRate, firstTaskFails.TaskFailureActions = 1, []string{"CreateListener"}
	if err := cl.current().SetFaults(firstTaskFails); err != nil {
		t.Fatal(err)
	}
	const grow = 5
	growStart := time.Now()
	eventually(t, "grow the pool", func() error {
		pp := &clbv1alpha1.PortPool{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "faults"}, pp); err != nil {
			return err
		}
		pp.Spec.ForProvider.EndPort = 44049 + grow
		return kube.Update(context.Background(), pp)
	})
	eventually(t, "a listener task failed", func() error {
		if cl.current().FaultsInjected()["TaskFailed"] == 0 {
			return errors.New("none yet")
		}
		return nil
	})
	if err := cl.current().SetFaults(cloudFaults()); err != nil {
		t.Fatal(err)
	}
	faultUp, faultDown := scaleUpDown(t, ns, "faults", "faulty", pods, cl, func() {
		cl.restart(t, cfg, endpoint)
		if err := cl.current().SetFaults(cloudFaults()); err != nil {
			t.Fatal(err)
		}
	})
	converge(t, "the grown pool with all its listeners", func() error {
		pp := &clbv1alpha1.PortPool{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "faults"}, pp); err != nil {
			return err
		}
		for _, l := range pp.Status.AtProvider.LoadBalancers {
			if l.State != clbv1alpha1.PoolLBReady || l.ListenersReady != l.ListenersWanted || l.ListenersWanted != 50+grow {
				return errors.Errorf("load balancer %s: %s, %d/%d listeners", l.ID, l.State, l.ListenersReady, l.ListenersWanted)
			}
		}
		return nil
	})
	t.Logf("the pool grew by %d listeners per load balancer under faults; all ready %s after the change", grow, time.Since(growStart).Round(time.Millisecond))
	injected := cl.injected()
	total := 0
	for _, n := range injected {
		total += n
	}
	t.Logf("under faults (%d injected: %v; the emulator restarted once from its state file): %d Pods Bound in %s, all gone in %s",
		total, injected, pods, faultUp.Round(time.Millisecond), faultDown.Round(time.Millisecond))
	clean, faulty := cleanUp+cleanDown, faultUp+faultDown
	t.Logf("convergence: fault-free %s, under faults %s, ratio %.2f (goal at most 2)",
		clean.Round(time.Millisecond), faulty.Round(time.Millisecond), faulty.Seconds()/clean.Seconds())
	if total == 0 {
		t.Error("no fault was injected; the test proves nothing")
	}
}

// restartable is the emulator of a test that restarts it.
type restartable struct {
	mu   sync.Mutex
	emu  *emulator.Emulator
	seen map[string]int // faults injected by the emulators already closed
}

func (r *restartable) current() *emulator.Emulator {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.emu
}

// restart closes the emulator, which saves its state file, and starts a
// new one from that file on the same address, so the ProviderConfig's
// endpoint still works.
func (r *restartable) restart(t *testing.T, cfg emulator.Config, endpoint string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = addCounts(r.seen, r.emu.FaultsInjected())
	// Close waits 2 s for calls in flight, then cuts them (a delayed call
	// may be held longer): those callers see a dropped connection.
	if err := r.emu.Close(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	// Counted once closed: calls in flight may still change the cloud
	// until then.
	before := len(targetsIn(r.emu))
	next, _, err := emulator.StartOn(cfg, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	r.emu = next
	if after := len(targetsIn(next)); after != before {
		t.Errorf("the restarted emulator has %d targets, the stopped one had %d", after, before)
	}
	t.Logf("emulator restarted from its state file with %d targets", before)
}

// injected counts the faults of every emulator so far.
func (r *restartable) injected() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return addCounts(maps.Clone(r.seen), r.emu.FaultsInjected())
}

func addCounts(a, b map[string]int) map[string]int {
	if a == nil {
		a = map[string]int{}
	}
	for k, v := range b {
		a[k] += v
	}
	return a
}

// scaleUpDown creates n Pods asking for a port of pool, waits until all
// are Bound with their targets in the cloud, then deletes them all and
// waits until nothing is left. midway runs once, after half the Pods were
// created. It returns how long each phase took to converge.
func scaleUpDown(t *testing.T, ns, pool, prefix string, n int, cl *restartable, midway func()) (up, down time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*faultPhaseTimeout)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				if _, err := churnPod(ctx, ns, fmt.Sprintf("%s-%03d", prefix, i), pool, fmt.Sprintf("10.63.%d.%d", i/250, i%250+1), false); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		work <- i
		if i == n/2 && midway != nil {
			midway()
		}
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	converge(t, "every Pod Bound with its target in the cloud", func() error {
		if b := countBound(t, ns); b != n {
			return errors.Errorf("%d of %d Bound: %s", b, n, notBound(t, ns))
		}
		return boundTargetsOnly(ns, cl.current(), n)
	})
	up = time.Since(start)

	start = time.Now()
	if err := kube.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	converge(t, "no PodAddress, no target, no allocated port", func() error {
		l := &v1alpha1.PodAddressList{}
		if err := kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
		if left := targetsIn(cl.current()); len(l.Items) != 0 || len(left) != 0 {
			return errors.Errorf("%d PodAddresses (%s) and %d targets left", len(l.Items), notBound(t, ns), len(left))
		}
		pp := &clbv1alpha1.PortPool{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: pool}, pp); err != nil {
			return err
		}
		if a := pp.Status.AtProvider; a.Allocated != 0 || a.Bindings != 0 {
			return errors.Errorf("PortPool: allocated %d, bindings %d", a.Allocated, a.Bindings)
		}
		return nil
	})
	return up, time.Since(start)
}

// converge polls fn until it holds, failing the test after
// faultPhaseTimeout.
func converge(t *testing.T, what string, fn func() error) {
	t.Helper()
	if err := testenv.Eventually(context.Background(), faultPhaseTimeout, fn); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// boundTargetsOnly checks that the cloud holds exactly the n targets the
// PodAddresses of ns record, one per listener, and no address twice.
func boundTargetsOnly(ns string, emu *emulator.Emulator, n int) error {
	l := &v1alpha1.PodAddressList{}
	if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		return err
	}
	want := map[string]string{} // listener → target
	for _, pa := range l.Items {
		for _, b := range pa.Status.Bindings {
			id := b.ListenerIDs["TCP"]
			if other, dup := want[id]; dup {
				return errors.Errorf("listener %s (%s) is bound to two PodAddresses (%s and %s:%d)", id, b.Address, other, b.TargetIP, b.TargetPort)
			}
			want[id] = fmt.Sprintf("%s:%d", b.TargetIP, b.TargetPort)
		}
	}
	var wrong []string
	got := 0
	for _, lb := range emu.Inventory().LoadBalancers {
		for _, li := range lb.Listeners {
			for _, tg := range li.Targets {
				got++
				if s := fmt.Sprintf("%s:%d", tg.IP, tg.Port); want[li.ID] != s {
					wrong = append(wrong, fmt.Sprintf("%s has %s, want %q", li.ID, s, want[li.ID]))
				}
			}
		}
	}
	slices.Sort(wrong)
	if got != n || len(wrong) > 0 {
		return errors.Errorf("%d targets in the cloud for %d Pods; wrong: %s", got, n, strings.Join(wrong, "; "))
	}
	return nil
}
