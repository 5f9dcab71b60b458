package podaddress

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// ownCloud starts an emulator for one test, with a namespaced
// ProviderConfig in ns that points at it, so that the test alone makes its
// calls and fills its inventory.
func ownCloud(t *testing.T, ns string, mod func(*emulator.Config)) (*emulator.Emulator, *xpv2.ProviderConfigReference) {
	t.Helper()
	cfg, err := emulatortest.WithPolicyFile(emulator.DefaultConfig(), suite.CAMPolicyFile(), emulator.Credential{SecretID: emulator.DefaultSecretID, SecretKey: emulator.DefaultSecretKey})
	if err != nil {
		t.Fatal(err)
	}
	cfg.TaskDuration = 20 * time.Millisecond
	if mod != nil {
		mod(&cfg)
	}
	emu, endpoint, err := emulator.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r := emulatortest.Refused(emu, emulator.DefaultSecretID); len(r) > 0 {
			t.Errorf("the CAM policy README documents refused calls of the provider: %v", r)
		}
		_ = emu.Close()
	})
	if err := testenv.ApplyTeamProviderConfig(context.Background(), kube, ns, endpoint); err != nil {
		t.Fatal(err)
	}
	return emu, &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "team-a"}
}

// lbsOn creates n LoadBalancers that use ref and waits until they are
// Ready.
func lbsOn(t *testing.T, ns string, n int, ref *xpv2.ProviderConfigReference) []string {
	t.Helper()
	var names []string
	var crs []*clbv1alpha1.LoadBalancer
	for i := range n {
		cr := &clbv1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("lb-%d", i)}}
		cr.Spec.ForProvider.Type = clb.Ptr("OPEN")
		cr.Spec.ProviderConfigReference = ref
		if err := kube.Create(context.Background(), cr); err != nil {
			t.Fatal(err)
		}
		names, crs = append(names, cr.Name), append(crs, cr)
	}
	for _, cr := range crs {
		waitReady(t, cr)
	}
	return names
}

// churnPod creates a Pod that asks for port 7777 of pool (TCP, or TCP_UDP)
// and gives it ip; it returns the Pod and whether it was created.
func churnPod(ctx context.Context, ns, name, pool, ip string, tcpudp bool) (*corev1.Pod, error) {
	ports := []corev1.ContainerPort{{ContainerPort: 7777, Protocol: corev1.ProtocolTCP}}
	ann := map[string]string{ourPorts: "7777 " + pool}
	if tcpudp {
		ports = append(ports, corev1.ContainerPort{ContainerPort: 7777, Protocol: corev1.ProtocolUDP})
		ann[ourPorts] = "7777/TCP_UDP " + pool
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "example/server", Ports: ports}}},
	}
	if err := kube.Create(ctx, p); err != nil {
		return nil, err
	}
	if ip == "" {
		return p, nil
	}
	return p, giveIP(ctx, p, ip)
}

// giveIP sets a Pod's IP as a kubelet would; a Pod already gone is fine.
func giveIP(ctx context.Context, p *corev1.Pod, ip string) error {
	return testenv.Eventually(ctx, wait, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			if kerrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP, p.Status.PodIPs, p.Status.HostIP = ip, []corev1.PodIP{{IP: ip}}, "10.0.0.1"
		err := kube.Status().Update(ctx, p)
		if kerrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// churn creates n Pods, a quarter of them with a TCP_UDP port, and deletes
// each at a random moment 0-2 s after it was created. midway runs once,
// after half of them were created. It returns when every Pod is gone.
func churn(t *testing.T, ns, pool string, n int, midway func()) {
	t.Helper()
	seed := time.Now().UnixNano()
	t.Logf("churn seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 9)) //nolint:gosec // a test's schedule, not a secret
	delays := make([]time.Duration, n)
	for i := range delays {
		delays[i] = time.Duration(rng.Int64N(int64(2 * time.Second)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	var deletions, workers sync.WaitGroup
	errs := make(chan error, n)
	work := make(chan int)
	for range 8 {
		workers.Go(func() {
			for i := range work {
				name := fmt.Sprintf("churn-%03d", i)
				created := time.Now()
				p, err := churnPod(ctx, ns, name, pool, fmt.Sprintf("10.60.%d.%d", i/250, i%250+1), i%4 == 0)
				if err != nil {
					errs <- errors.Wrapf(err, "Pod %s", name)
					continue
				}
				deletions.Go(func() {
					// The moment of deletion is the test's input, not a wait
					// for a condition.
					time.Sleep(time.Until(created.Add(delays[i])))
					if err := kube.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
						errs <- errors.Wrapf(err, "delete Pod %s", name)
					}
				})
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
	workers.Wait()
	deletions.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	eventually(t, "every churned Pod gone", func() error {
		l := &corev1.PodList{}
		if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(l.Items) != 0 {
			return errors.Errorf("%d Pods left", len(l.Items))
		}
		return nil
	})
}

// watchStates polls the PodAddresses of ns until stop is called and
// returns how many reached each state, and how many were seen with a
// target recorded but not yet bound; it shows what the churn exercised.
func watchStates(ns string) (stop func() string) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	seen := map[string]map[string]bool{} // state → names
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			l := &v1alpha1.PodAddressList{}
			if err := kube.List(ctx, l, client.InNamespace(ns)); err == nil {
				mu.Lock()
				for _, pa := range l.Items {
					states := []string{"state " + pa.Status.State}
					recorded, pending := false, false
					for _, b := range pa.Status.Bindings {
						recorded = recorded || b.TargetIP != ""
						pending = pending || b.TargetIP != "" && b.Address == ""
					}
					if pending {
						states = append(states, "target recorded, registration not yet confirmed")
					}
					if pa.DeletionTimestamp != nil && recorded {
						states = append(states, "deleted with a target recorded")
					}
					for _, s := range states {
						if seen[s] == nil {
							seen[s] = map[string]bool{}
						}
						seen[s][pa.Name] = true
					}
				}
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() string {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for s, names := range seen {
			out = append(out, fmt.Sprintf("%s: %d", s, len(names)))
		}
		sort.Strings(out)
		return strings.Join(out, ", ")
	}
}

// targetsIn lists every target in the emulator's inventory.
func targetsIn(emu *emulator.Emulator) []string {
	var out []string
	for _, lb := range emu.Inventory().LoadBalancers {
		for _, l := range lb.Listeners {
			for _, tg := range l.Targets {
				out = append(out, fmt.Sprintf("%s/%s(%s %d): %s:%d", lb.ID, l.ID, l.Protocol, l.Port, tg.IP, tg.Port))
			}
		}
	}
	return out
}

// nothingLeft waits until ns has no PodAddress, the emulator no target and
// the PortPool no allocated slot, then proves the allocator has every slot
// free: slots new Pods (one per slot) must all be Bound; they are deleted
// again and must leave nothing either.
// states, from watchStates, is stopped and reported once the churned
// PodAddresses are gone.
func nothingLeft(t *testing.T, ns, pool string, emu *emulator.Emulator, slots int, states func() string) {
	t.Helper()
	start := time.Now()
	eventually(t, "every PodAddress gone", func() error {
		l := &v1alpha1.PodAddressList{}
		if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(l.Items) != 0 {
			return errors.Errorf("%d left: %s", len(l.Items), notBound(t, ns))
		}
		return nil
	})
	eventually(t, "no target in the cloud", func() error {
		if left := targetsIn(emu); len(left) != 0 {
			return errors.Errorf("%d targets left: %v", len(left), left)
		}
		return nil
	})
	t.Logf("all PodAddresses gone and 0 targets in the emulator %s after the last Pod was deleted", time.Since(start).Round(time.Millisecond))
	t.Logf("churned PodAddresses seen: %s", states())
	t.Logf("cloud calls until then: %v", emu.Calls())
	poolFree(t, ns, pool)

	// Every slot can be handed out again: a port the allocator still held
	// for a gone Pod would leave one of these Pods without one.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	fillStart := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, slots)
	for i := range slots {
		wg.Go(func() {
			if _, err := churnPod(ctx, ns, fmt.Sprintf("fill-%03d", i), pool, fmt.Sprintf("10.61.%d.%d", i/250, i%250+1), false); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	eventually(t, fmt.Sprintf("all %d slots bound again", slots), func() error {
		if n := countBound(t, ns); n != slots {
			return errors.Errorf("%d of %d Bound: %s", n, slots, notBound(t, ns))
		}
		return nil
	})
	if n := len(targetsIn(emu)); n != slots {
		t.Errorf("%d targets for %d filling Pods", n, slots)
	}
	t.Logf("%d new Pods took every slot of the pool and were Bound in %s", slots, time.Since(fillStart).Round(time.Millisecond))
	if err := kube.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the filling Pods' addresses gone", func() error {
		l := &v1alpha1.PodAddressList{}
		if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			return err
		}
		if left := targetsIn(emu); len(l.Items) != 0 || len(left) != 0 {
			return errors.Errorf("%d PodAddresses and %d targets left", len(l.Items), len(left))
		}
		return nil
	})
	poolFree(t, ns, pool)
}

// poolFree waits until the PortPool's status counts no allocated slot and
// no binding.
func poolFree(t *testing.T, ns, pool string) {
	t.Helper()
	pp := &clbv1alpha1.PortPool{}
	eventually(t, "PortPool "+pool+" with every slot free", func() error {
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pool}, pp); err != nil {
			return err
		}
		if a := pp.Status.AtProvider; a.Allocated != 0 || a.Bindings != 0 {
			return errors.Errorf("allocated %d, bindings %d, free %d", a.Allocated, a.Bindings, a.Free)
		}
		return nil
	})
	t.Logf("PortPool %s: allocated 0, bindings 0, free %d", pool, pp.Status.AtProvider.Free)
}

// churnPool makes a TCP+UDP pool of 2 load balancers × 50 slots (100
// listeners each) on its own emulator: room for all 100 churned Pods.
func churnPool(t *testing.T, ns string) (*emulator.Emulator, int) {
	t.Helper()
	emu, ref := ownCloud(t, ns, func(c *emulator.Config) { c.ListenerQuota = 100 })
	names := lbsOn(t, ns, 2, ref)
	pool(t, ns, "churn", names, 41000, 41049, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.ProviderConfigReference = ref
		pp.Spec.ForProvider.Protocols = []string{"TCP", "UDP"}
	})
	return emu, 100
}

// TestDeleteWhileBinding: 100 Pods, a quarter with a TCP_UDP port, each
// deleted at a random moment 0-2 s after it was created, many of them
// while their targets are being registered, leave no target in the cloud
// and every port free.
func TestDeleteWhileBinding(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	emu, slots := churnPool(t, ns)
	emu.ResetCounters()

	states := watchStates(ns)
	start := time.Now()
	churn(t, ns, "churn", 100, nil)
	t.Logf("100 Pods created and deleted in %s", time.Since(start).Round(time.Millisecond))
	nothingLeft(t, ns, "churn", emu, slots, states)
}

// TestDeleteWhileBindingProviderKilled is TestDeleteWhileBinding with the
// provider, a real process, SIGKILLed once half the Pods were created; a
// fresh provider process finishes the job.
func TestDeleteWhileBindingProviderKilled(t *testing.T) {
	bin, err := testenv.BuildProvider(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first := startProviderProcess(t, bin, "first")
	ns := namespace(t)
	emu, slots := churnPool(t, ns)
	emu.ResetCounters()

	states := watchStates(ns)
	start := time.Now()
	var second *testenv.Provider
	churn(t, ns, "churn", 100, func() {
		first.Kill()
		t.Logf("provider SIGKILLed %s into the churn; %d targets in the cloud", time.Since(start).Round(time.Millisecond), len(targetsIn(emu)))
		second = startProviderProcess(t, bin, "second")
	})
	t.Logf("100 Pods created and deleted in %s", time.Since(start).Round(time.Millisecond))
	nothingLeft(t, ns, "churn", emu, slots, states)
	second.StopWithin(t, 10*time.Second)
}

// startProviderProcess runs the provider binary against the test control
// plane.
func startProviderProcess(t *testing.T, bin, name string) *testenv.Provider {
	t.Helper()
	// Registered first, so it runs after the provider is stopped.
	var p *testenv.Provider
	t.Cleanup(func() {
		if p == nil {
			return
		}
		if err := scan.ScanFile(p.Log); err != nil {
			t.Errorf("secret scan of the provider log: %v", err)
		}
	})
	p = testenv.RunProvider(t, env.KubeConfig, bin, name, "--poll", "5s", "--max-reconcile-rate", "50")
	return p
}

// TestDeregisterTargetAlreadyGone: a recorded target that is no longer in
// the cloud (removed behind the provider's back, or whose registration was
// never sent) counts as deregistered. The API refuses a deregistration of a
// target that is not bound (FailListenerIdSet, "Target … is not bound"),
// so the provider describes the listener, sees the target gone, and lets
// the PodAddress and its port go.
func TestDeregisterTargetAlreadyGone(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	emu, ref := ownCloud(t, ns, nil)
	pool(t, ns, "gone", lbsOn(t, ns, 1, ref), 43000, 43004, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.ProviderConfigReference = ref
		pp.Spec.ForProvider.Protocols = []string{"TCP", "UDP"}
	})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	p, err := churnPod(ctx, ns, "relay", "gone", "10.62.0.1", true)
	if err != nil {
		t.Fatal(err)
	}
	b := bound(t, ns, "relay").Status.Bindings[0]

	// Remove the UDP target behind the provider's back.
	c, err := clb.NewPool(clb.Options{}).Client(clients.Config{SecretID: emulatortest.ConsoleSecretID, SecretKey: emulatortest.ConsoleSecretKey,
		Region: emulator.DefaultRegion, Endpoint: emu.Endpoint(), Scheme: "http"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeregisterTargets(ctx, b.LoadBalancerID, []clb.Target{{ListenerID: b.ListenerIDs["UDP"], EniIP: b.TargetIP, Port: int64(b.TargetPort)}}); err != nil {
		t.Fatal(err)
	}
	if left := targetsIn(emu); len(left) != 1 {
		t.Fatalf("targets %v, want only the TCP one", left)
	}
	emu.ResetCounters()

	deletePod(t, p)
	eventually(t, "the PodAddress gone", func() error {
		err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "relay"}, &v1alpha1.PodAddress{})
		if kerrors.IsNotFound(err) {
			return nil
		}
		return errors.Errorf("still there (%v)", err)
	})
	if left := targetsIn(emu); len(left) != 0 {
		t.Errorf("targets left: %v", left)
	}
	calls := emu.Calls()
	t.Logf("cloud calls of the deletion: %v", calls)
	if calls["DescribeTargets"]["OK"] == 0 {
		t.Error("the refused deregistration was never confirmed with DescribeTargets; the test proves nothing")
	}
	poolFree(t, ns, "gone")
}
