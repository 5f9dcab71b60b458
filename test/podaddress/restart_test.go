package podaddress

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// TestKilledAfterCreateWithBindings starts a provider on PodAddresses
// that a killed one left right after creating them with their bindings
// (ports and targets in the create, status never written) and registering
// their targets: one whose Pod runs, one whose Pod is gone. Both ports of
// the pool are taken by those records, so a third Pod waiting from the
// start must get no port until the gone Pod's target is deregistered and
// its port returned; the running Pod keeps its recorded port and target.
func TestKilledAfterCreateWithBindings(t *testing.T) {
	stop := startProvider(t)
	ns := namespace(t)
	lb(t, ns, "lb-a", "BGP")
	pp := pool(t, ns, "rec", []string{"lb-a"}, 44000, 44001)
	stop()
	ctx := context.Background()
	ann := map[string]string{ourPorts: "7777 rec"}
	sealer := sealOf(t)

	c, err := clb.NewPool(clb.Options{}).Client(clients.Config{SecretID: emulator.DefaultSecretID, SecretKey: emulator.DefaultSecretKey,
		Region: emulator.DefaultRegion, Endpoint: cloud.Endpoint(), Scheme: "http"})
	if err != nil {
		t.Fatal(err)
	}
	st := pp.Status.AtProvider.LoadBalancers[0]
	listenerOf := func(port int32) string {
		return st.ListenerID(clbv1alpha1.ListenerKey{Protocol: "TCP", Port: port})
	}
	// left makes what the killed provider left for a Pod named name:
	// its PodAddress created with a binding on port, and the target
	// registered.
	left := func(name, ip string, port int32, uid string) {
		t.Helper()
		p := &corev1.Pod{}
		p.SetNamespace(ns)
		p.SetName(name)
		p.SetAnnotations(ann)
		req, _, err := podannotation.Parse(p)
		if err != nil {
			t.Fatal(err)
		}
		pa := &v1alpha1.PodAddress{}
		pa.SetNamespace(ns)
		pa.SetName(name)
		pa.SetFinalizers([]string{podaddress.Finalizer})
		pa.Spec = v1alpha1.PodAddressSpec{PodUID: uid, Ports: req.Ports, Source: "annotation/" + req.Syntax}
		b := v1alpha1.PortBinding{
			Pool: v1alpha1.PoolKey(ns, "rec"), Protocol: "TCP", ContainerPort: 7777,
			LoadBalancerID: st.ID, LoadBalancerName: st.Name, LoadBalancerType: st.Type, Region: st.Region, ISP: st.ISP, VIPs: st.VIPs,
			Port: port, ListenerIDs: map[string]string{"TCP": listenerOf(port)},
			TargetIP: ip, TargetPort: 7777,
		}
		if err := v1alpha1.SetCreatedBindings(pa, []v1alpha1.PortBinding{b}); err != nil {
			t.Fatal(err)
		}
		sealer.SealCreated(pa, time.Now())
		if err := kube.Create(ctx, pa); err != nil {
			t.Fatal(err)
		}
		if _, err := c.RegisterTargets(ctx, st.ID, []clb.Target{{ListenerID: listenerOf(port), EniIP: ip, Port: 7777}}); err != nil {
			t.Fatal(err)
		}
	}
	running := pod(t, ns, "gs-run", "10.63.0.1", ann)
	left("gs-run", "10.63.0.1", 44001, string(running.GetUID()))
	left("gs-gone", "10.63.0.2", 44000, "a-pod-deleted-while-no-provider-ran")
	pod(t, ns, "gs-new", "10.63.0.3", ann)

	// While the gone Pod's target is in the cloud, its port is nobody
	// else's, and the running Pod's port never is: polled until the end.
	stopWatch := make(chan struct{})
	var mu sync.Mutex
	var seen []string
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			pa := &v1alpha1.PodAddress{}
			if kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gs-new"}, pa) == nil {
				for _, b := range pa.Status.Bindings {
					if b.Port == 44000 && slices.Contains(cloudTargets(st.ID, listenerOf(44000)), "10.63.0.2:7777") {
						mu.Lock()
						seen = append(seen, fmt.Sprintf("gs-new given port 44000 (state %s) while gs-gone's target is registered", pa.Status.State))
						mu.Unlock()
					}
					if b.Port == 44001 {
						mu.Lock()
						seen = append(seen, "gs-new given port 44001, recorded by gs-run")
						mu.Unlock()
					}
				}
			}
			select {
			case <-stopWatch:
				return
			case <-tick.C:
			}
		}
	}()

	startProvider(t)
	run := bound(t, ns, "gs-run")
	if b := run.Status.Bindings; len(b) != 1 || b[0].Port != 44001 || b[0].TargetIP != "10.63.0.1" {
		t.Errorf("gs-run's bindings %+v, want its recorded port 44001 and target 10.63.0.1", b)
	}
	eventually(t, "gs-gone's PodAddress gone", func() error {
		err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gs-gone"}, &v1alpha1.PodAddress{})
		if err == nil {
			return errors.New("still there")
		}
		return client.IgnoreNotFound(err)
	})
	nb := bound(t, ns, "gs-new")
	close(stopWatch)
	mu.Lock()
	defer mu.Unlock()
	for _, s := range slices.Compact(seen) {
		t.Error(s)
	}
	if b := nb.Status.Bindings; len(b) != 1 || b[0].Port != 44000 {
		t.Errorf("gs-new's bindings %+v, want port 44000, the one gs-gone returned", b)
	}
	if got := cloudTargets(st.ID, listenerOf(44000)); !slices.Equal(got, []string{"10.63.0.3:7777"}) {
		t.Errorf("port 44000's targets %v, want only gs-new's 10.63.0.3:7777", got)
	}
	if got := cloudTargets(st.ID, listenerOf(44001)); !slices.Equal(got, []string{"10.63.0.1:7777"}) {
		t.Errorf("port 44001's targets %v, want only gs-run's 10.63.0.1:7777", got)
	}
}

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
