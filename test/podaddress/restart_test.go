package podaddress

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// TestRestartMidway allocates 200 Pods, stops the provider while it is
// binding them, starts a new one (empty memory) and lets it finish. No
// port may be given twice, no target may leak, every Pod must be Bound.
func TestRestartMidway(t *testing.T) {
	const pods, lbs = 200, 5
	stop := startProvider(t)
	ns := namespace(t)
	var names []string
	for i := range lbs {
		names = append(names, fmt.Sprintf("lb-%d", i))
		lb(t, ns, names[i], "BGP")
	}
	pp := pool(t, ns, "big", names, 40000, 40049)

	ann := map[string]string{ourPorts: "7777 big"}
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				pod(t, ns, fmt.Sprintf("gs-%03d", i), fmt.Sprintf("10.9.%d.%d", i/250, i%250+1), ann)
			}
		}()
	}
	for i := range pods {
		work <- i
		if i == pods/2 {
			// Kill the provider while Pods are still arriving and binding.
			stop()
		}
	}
	close(work)
	wg.Wait()
	stopped := countBound(t, ns)
	t.Logf("%d of %d Pods were Bound when the provider stopped", stopped, pods)

	startProvider(t)
	eventually(t, "all Pods Bound after the restart", func() error {
		if n := countBound(t, ns); n != pods {
			return errors.Errorf("%d of %d Bound; others: %s", n, pods, notBound(t, ns))
		}
		return nil
	})

	// No slot twice, and the cloud holds exactly the bound targets.
	l := &v1alpha1.PodAddressList{}
	if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	slots := map[string]string{}
	want := map[string]string{} // listener id → target
	for _, pa := range l.Items {
		for _, b := range pa.Status.Bindings {
			k := fmt.Sprintf("%s:%d", b.LoadBalancerID, b.Port)
			if other, ok := slots[k]; ok {
				t.Errorf("%s is bound to both %s and %s", k, other, pa.Name)
			}
			slots[k] = pa.Name
			want[b.ListenerIDs["TCP"]] = fmt.Sprintf("%s:%d", b.TargetIP, b.TargetPort)
		}
	}
	targets := 0
	for _, lbs := range pp.Status.AtProvider.LoadBalancers {
		inv, _ := cloud.Inventory().LoadBalancer(lbs.ID)
		for _, li := range inv.Listeners {
			for _, tg := range li.Targets {
				targets++
				if got := fmt.Sprintf("%s:%d", tg.IP, tg.Port); want[li.ID] != got {
					t.Errorf("listener %s (port %d) has target %s, want %q", li.ID, li.Port, got, want[li.ID])
				}
			}
		}
	}
	if targets != pods {
		t.Errorf("%d targets in the cloud, want %d (one per Pod)", targets, pods)
	}
}

func countBound(t testing.TB, ns string) int {
	t.Helper()
	l := &v1alpha1.PodAddressList{}
	if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, pa := range l.Items {
		if pa.Status.State == v1alpha1.StateBound {
			n++
		}
	}
	return n
}

// notBound summarises the PodAddresses that are not Bound, for failures.
func notBound(t testing.TB, ns string) string {
	l := &v1alpha1.PodAddressList{}
	if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	states := map[string]int{}
	example := map[string]string{}
	for _, pa := range l.Items {
		if pa.Status.State != v1alpha1.StateBound {
			states[pa.Status.State]++
			example[pa.Status.State] = pa.Name + ": " + pa.Status.Message
		}
	}
	return fmt.Sprintf("%d PodAddresses; %v; e.g. %v", len(l.Items), states, example)
}
