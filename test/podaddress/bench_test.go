package podaddress

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// benchTimeout bounds one run of the benchmark.
const benchTimeout = 3 * time.Minute

// writeActions are the CLB calls that change the cloud.
var writeActions = []string{
	"BatchRegisterTargets", "BatchDeregisterTargets", "RegisterTargets", "DeregisterTargets",
	"CreateListener", "DeleteListener", "ModifyListener", "CreateLoadBalancer", "BatchModifyTargetWeight",
}

// BenchmarkBind1000Pods creates 1000 Pods that each ask for one public
// address, against the emulator's realistic profile (50 ms per call, 1 s
// tasks, 20 requests per second per action, 50 listeners per load
// balancer), and reports the time from the first Pod created until all are
// Bound, the cloud write calls per Pod, and the p50/p99 bind latency.
// Run: go test ./test/podaddress -run '^$' -bench Bind1000Pods -benchtime 1x
func BenchmarkBind1000Pods(b *testing.B) {
	// LeastUsed spreads Pods over all load balancers at once (more, smaller
	// batches); InOrder fills one load balancer after the other (fewer,
	// larger batches).
	for _, policy := range []string{clbv1alpha1.PolicyLeastUsed, clbv1alpha1.PolicyInOrder} {
		b.Run(policy, func(b *testing.B) { benchBind(b, policy) })
	}
}

func benchBind(b *testing.B, policy string) {
	pods := 1000
	if n, err := strconv.Atoi(os.Getenv("BENCH_PODS")); err == nil && n > 0 {
		pods = n // a smaller run while iterating
	}
	real, endpoint, err := emulator.Start(emulator.RealisticConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = real.Close() }()

	for range b.N {
		b.StopTimer()
		startProvider(b, suite.Workers(64))
		ns := namespace(b)
		// A namespaced ProviderConfig sends this namespace's resources to
		// the realistic emulator.
		if err := testenv.ApplyTeamProviderConfig(context.Background(), kube, ns, endpoint); err != nil {
			b.Fatal(err)
		}
		ref := &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "team-a"}
		var lbNames []string
		for i := range (pods + 49) / 50 {
			name := fmt.Sprintf("lb-%02d", i)
			lbNames = append(lbNames, name)
			cr := &clbv1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			cr.Spec.ForProvider.Type = clb.Ptr("OPEN")
			cr.Spec.ProviderConfigReference = ref
			if err := kube.Create(context.Background(), cr); err != nil {
				b.Fatal(err)
			}
		}
		pool(b, ns, "bench", lbNames, 40000, 40049, func(pp *clbv1alpha1.PortPool) {
			pp.Spec.ProviderConfigReference = ref
			pp.Spec.ForProvider.AllocationPolicy = &policy
		})
		real.ResetCounters()

		// Poll the bindings to see when each one becomes Bound (a List
		// every 50 ms, so latencies are exact to about 50 ms).
		boundAt := map[string]time.Time{}
		var mu sync.Mutex
		allBound := make(chan struct{})
		pollCtx, stopPoll := context.WithCancel(context.Background())
		go func() {
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-pollCtx.Done():
					return
				case <-t.C:
				}
				l := &v1alpha1.PodAddressList{}
				if err := kube.List(pollCtx, l, client.InNamespace(ns)); err != nil {
					continue
				}
				now := time.Now()
				mu.Lock()
				for _, pa := range l.Items {
					if _, seen := boundAt[pa.Name]; !seen && pa.Status.State == v1alpha1.StateBound {
						boundAt[pa.Name] = now
					}
				}
				n := len(boundAt)
				mu.Unlock()
				if n == pods {
					close(allBound)
					return
				}
			}
		}()

		b.StartTimer()
		start := time.Now()
		created := make([]time.Time, pods)
		var wg sync.WaitGroup
		work := make(chan int)
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					p := &corev1.Pod{
						ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("gs-%04d", i), Annotations: map[string]string{ourPorts: "7777 bench"}},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "s", Image: "example/server", Ports: []corev1.ContainerPort{{ContainerPort: 7777}}}}},
					}
					p.Status.PodIP = fmt.Sprintf("10.%d.%d.%d", 100+i/62500, (i/250)%250, i%250+1)
					if err := kube.Create(context.Background(), p); err != nil {
						b.Error(err)
						continue
					}
					created[i] = time.Now()
					p.Status.Phase, p.Status.PodIP = corev1.PodRunning, fmt.Sprintf("10.%d.%d.%d", 100+i/62500, (i/250)%250, i%250+1)
					if err := kube.Status().Update(context.Background(), p); err != nil {
						b.Error(err)
					}
				}
			}()
		}
		for i := range pods {
			work <- i
		}
		close(work)
		wg.Wait()
		createdAll := time.Since(start)
		select {
		case <-allBound:
		case <-time.After(benchTimeout):
			mu.Lock()
			n := len(boundAt)
			mu.Unlock()
			b.Fatalf("only %d of %d Pods Bound after 5 minutes: %s", n, pods, notBound(b, ns))
		}
		total := time.Since(start)
		b.StopTimer()
		stopPoll()

		calls := real.Calls()
		writes := 0
		for _, a := range writeActions {
			for _, n := range calls[a] {
				writes += n
			}
		}
		var lat []float64
		mu.Lock()
		for i := range pods {
			lat = append(lat, boundAt[fmt.Sprintf("gs-%04d", i)].Sub(created[i]).Seconds())
		}
		mu.Unlock()
		slices.Sort(lat)
		b.ReportMetric(total.Seconds(), "s-to-all-bound")
		b.ReportMetric(float64(writes)/float64(pods), "writes/pod")
		b.ReportMetric(lat[len(lat)/2]*1000, "p50-ms")
		b.ReportMetric(lat[len(lat)*99/100]*1000, "p99-ms")
		b.Logf("%d Pods (all created and running after %s): all Bound %s after the first was created; %d cloud write calls (%v); bind latency p50 %.0f ms, p99 %.0f ms",
			pods, createdAll.Round(time.Millisecond), total.Round(time.Millisecond), writes, calls["BatchRegisterTargets"], lat[len(lat)/2]*1000, lat[len(lat)*99/100]*1000)
	}
}

// BenchmarkCreate1000PodsAlone is the baseline of BenchmarkBind1000Pods:
// the same 1000 Pods created and given an IP with no provider running, to
// show how much of that benchmark's time is the API server's.
func BenchmarkCreate1000PodsAlone(b *testing.B) {
	for range b.N {
		b.StopTimer()
		ns := namespace(b)
		b.StartTimer()
		start := time.Now()
		var wg sync.WaitGroup
		work := make(chan int)
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					p := &corev1.Pod{
						ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("gs-%04d", i), Annotations: map[string]string{ourPorts: "7777 bench"}},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "s", Image: "example/server", Ports: []corev1.ContainerPort{{ContainerPort: 7777}}}}},
					}
					if err := kube.Create(context.Background(), p); err != nil {
						b.Error(err)
						continue
					}
					p.Status.Phase, p.Status.PodIP = corev1.PodRunning, fmt.Sprintf("10.%d.%d.%d", 100+i/62500, (i/250)%250, i%250+1)
					if err := kube.Status().Update(context.Background(), p); err != nil {
						b.Error(err)
					}
				}
			}()
		}
		for i := range 1000 {
			work <- i
		}
		close(work)
		wg.Wait()
		b.ReportMetric(time.Since(start).Seconds(), "s-to-create")
	}
}
