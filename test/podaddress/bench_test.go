package podaddress

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/clbconv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/testenv"
)

// writeActions are the CLB calls that change the cloud.
var writeActions = []string{ //nolint:gochecknoglobals // a fixed list.
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
	const pods = 1000
	real, endpoint, err := emulator.Start(emulator.RealisticConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = real.Close() }()

	for range b.N {
		b.StopTimer()
		startProviderWith(b, env.Config, 64)
		ns := namespace(b)
		// A namespaced ProviderConfig sends this namespace's resources to
		// the realistic emulator.
		dir := filepath.Join(testenv.RepoRoot(), "examples", "providerconfig")
		_, err := testenv.Apply(context.Background(), kube, filepath.Join(dir, "providerconfig.yaml"), testenv.WithEndpoint(endpoint), func(u *unstructured.Unstructured) { u.SetNamespace(ns) })
		if err != nil {
			b.Fatal(err)
		}
		ref := &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "team-a"}
		var lbNames []string
		for i := range pods / 50 {
			name := fmt.Sprintf("lb-%02d", i)
			lbNames = append(lbNames, name)
			cr := &clbv1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			cr.Spec.ForProvider.Type = clbconv.Ptr("OPEN")
			cr.Spec.ProviderConfigReference = ref
			if err := kube.Create(context.Background(), cr); err != nil {
				b.Fatal(err)
			}
		}
		pool(b, ns, "bench", lbNames, 40000, 40049, func(pp *clbv1alpha1.PortPool) { pp.Spec.ProviderConfigReference = ref })
		real.ResetCounters()

		// Watch bindings to see when each one becomes Bound.
		wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
		if err != nil {
			b.Fatal(err)
		}
		w, err := wc.Watch(context.Background(), &v1alpha1.PodAddressList{}, client.InNamespace(ns))
		if err != nil {
			b.Fatal(err)
		}
		boundAt := map[string]time.Time{}
		var mu sync.Mutex
		allBound := make(chan struct{})
		go func() {
			for ev := range w.ResultChan() {
				pa, ok := ev.Object.(*v1alpha1.PodAddress)
				if !ok || pa.Status.State != v1alpha1.StateBound {
					continue
				}
				mu.Lock()
				if _, seen := boundAt[pa.Name]; !seen {
					boundAt[pa.Name] = time.Now()
					if len(boundAt) == pods {
						close(allBound)
					}
				}
				mu.Unlock()
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
		select {
		case <-allBound:
		case <-time.After(5 * time.Minute):
			b.Fatalf("only %d of %d Pods Bound after 5 minutes", len(boundAt), pods)
		}
		total := time.Since(start)
		b.StopTimer()
		w.Stop()

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
		b.ReportMetric(float64(writes)/pods, "writes/pod")
		b.ReportMetric(lat[len(lat)/2]*1000, "p50-ms")
		b.ReportMetric(lat[len(lat)*99/100]*1000, "p99-ms")
		b.Logf("%d Pods: all Bound %s after the first was created; %d cloud write calls (%v); bind latency p50 %.0f ms, p99 %.0f ms",
			pods, total.Round(time.Millisecond), writes, calls["BatchRegisterTargets"], lat[len(lat)/2]*1000, lat[len(lat)*99/100]*1000)
	}
}
