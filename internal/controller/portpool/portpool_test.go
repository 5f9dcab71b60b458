package portpool

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	sdkerrors "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kubefake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb/fake"
)

func pool(mods ...func(*v1alpha1.PortPool)) *v1alpha1.PortPool {
	p := &v1alpha1.PortPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-1"},
		Spec:       v1alpha1.PortPoolSpec{ForProvider: params(100, 104)},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func onLBs(ids ...string) func(*v1alpha1.PortPool) {
	return func(p *v1alpha1.PortPool) { p.Spec.ForProvider.LoadBalancerIDs = ids }
}

func podAddress(name string, bindings ...networkv1alpha1.PortBinding) *networkv1alpha1.PodAddress {
	return &networkv1alpha1.PodAddress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Status:     networkv1alpha1.PodAddressStatus{Bindings: bindings},
	}
}

func kubeWith(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, networkv1alpha1.AddToScheme, v1alpha1.SchemeBuilder.AddToScheme, clusterv1alpha1.SchemeBuilder.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return kubefake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithIndex(&networkv1alpha1.PodAddress{}, networkv1alpha1.PoolIndex, networkv1alpha1.PoolsOf).Build()
}

// newExternal serves the home region ap-guangzhou from home and other
// regions from others.
func newExternal(t *testing.T, home *fake.Cloud, others map[string]*fake.Cloud, objs ...client.Object) *external {
	t.Helper()
	kube := kubeWith(t, objs...)
	return &external{
		home: home, kube: kube, live: kube, shared: newShared(time.Now),
		config: func(context.Context, *v1alpha1.PortPool) (clients.Config, error) {
			return clients.Config{Region: "ap-guangzhou"}, nil
		},
		clientOf: func(cfg clients.Config) (api, error) {
			if c, ok := others[cfg.Region]; ok {
				return c, nil
			}
			return nil, fmt.Errorf("no region %s", cfg.Region)
		},
	}
}

// reconcile runs Observe and, as the managed reconciler would, Create or
// Update, on a fresh external client (one per reconcile).
func reconcile(t *testing.T, e external, cr *v1alpha1.PortPool) error {
	t.Helper()
	e.obs, e.cfg = nil, nil
	obs, err := e.Observe(context.Background(), cr)
	if err != nil {
		return err
	}
	switch {
	case !obs.ResourceExists:
		_, err = e.Create(context.Background(), cr)
	case !obs.ResourceUpToDate:
		_, err = e.Update(context.Background(), cr)
	}
	return err
}

func TestObserveStatus(t *testing.T) {
	home := fake.New("lb-a", "lb-b")
	home.LBs["lb-a"].AddressIPVersion = clb.Ptr("ipv4")
	// lb-b is IPv6FullChain: its address is AddressIPv6 alone.
	b := home.LBs["lb-b"]
	b.LoadBalancerVips, b.AddressIPv6 = []*string{}, clb.Ptr("fdc1:b000::2")
	b.AddressIPVersion, b.IPv6Mode = clb.Ptr("ipv6"), clb.Ptr("IPv6FullChain")
	cr := pool(onLBs("lb-a", "lb-b", "lb-gone", "lb-a"), func(p *v1alpha1.PortPool) {
		p.Spec.ForProvider.Blacklist = []string{"ap-guangzhou:lb-b"}
	})
	meta.SetExternalName(cr, "p")
	e := newExternal(t, home, nil, podAddress("pod-0",
		networkv1alpha1.PortBinding{Pool: "ns/p", Protocol: "TCP", LoadBalancerID: "lb-a", Port: 101},
		networkv1alpha1.PortBinding{Pool: "ns/other", LoadBalancerID: "lb-a", Port: 102},
	))
	for i := range 3 {
		if err := reconcile(t, *e, cr); err != nil {
			t.Fatalf("reconcile %d: %v", i, err)
		}
	}
	obs, err := e.Observe(context.Background(), cr)
	if err != nil {
		t.Fatal(err)
	}
	if !obs.ResourceUpToDate || obs.Diff != "" {
		t.Errorf("a complete pool is up to date: %+v", obs)
	}
	if c := cr.GetCondition(xpv2.TypeReady); c.Reason != xpv2.ReasonAvailable {
		t.Errorf("Ready = %+v, want Available", c)
	}
	got := cr.Status.AtProvider
	for i := range got.LoadBalancers {
		got.LoadBalancers[i].Listeners = map[string]string{"count": fmt.Sprint(len(got.LoadBalancers[i].Listeners))}
	}
	want := v1alpha1.PortPoolObservation{
		LoadBalancers: []v1alpha1.PoolLoadBalancerStatus{
			{ID: "lb-a", Region: "ap-guangzhou", VIPs: []string{"10.0.0.1"}, ISP: "BGP", State: v1alpha1.PoolLBReady, ListenersReady: 5, ListenersWanted: 5, Allocated: 1, AllocatedListeners: 1,
				AddressIPVersion: "ipv4", Free: 4, Listeners: map[string]string{"count": "5"}},
			{ID: "lb-b", Region: "ap-guangzhou", VIPs: []string{"fdc1:b000::2"}, ISP: "BGP", State: v1alpha1.PoolLBBlacklisted, ListenersReady: 5, ListenersWanted: 5, Free: 0, Listeners: map[string]string{"count": "5"},
				AddressIPVersion: "ipv6", IPv6Mode: "IPv6FullChain"},
			{ID: "lb-gone", Region: "ap-guangzhou", State: v1alpha1.PoolLBNotFound, ListenersWanted: 5, Listeners: map[string]string{"count": "0"}},
		},
		Allocated: 1, Free: 4, Bindings: 1, SlotsPerLoadBalancer: 5,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status: -want +got:\n%s", diff)
	}
	wantWrites := []string{
		"CreateListener lb-a TCP 100..104 end=0",
		"CreateListener lb-b TCP 100..104 end=0",
	}
	if diff := cmp.Diff(wantWrites, home.Log()); diff != "" {
		t.Errorf("a blacklisted load balancer still gets its listeners; a missing one gets nothing: -want +got:\n%s", diff)
	}
}

func TestSyncBusyDoesNotStopOthers(t *testing.T) {
	home := fake.New("lb-a", "lb-b", "lb-c")
	home.Errs["lb-a"] = sdkerrors.NewTencentCloudSDKError("FailedOperation.ResourceInOperating", "busy", "req")
	home.Errs["lb-c"] = sdkerrors.NewTencentCloudSDKError("LimitExceeded", "The number of listeners would exceed the quota", "req")
	cr := pool(onLBs("lb-a", "lb-b", "lb-c"))
	e := newExternal(t, home, nil)
	err := reconcile(t, *e, cr)
	if err == nil || !strings.Contains(err.Error(), "lb-c: cannot create listeners: the listener quota is used up") || strings.Contains(err.Error(), "lb-a") {
		t.Errorf("error %v: want lb-c's quota problem only (a busy load balancer is retried, not reported)", err)
	}
	if diff := cmp.Diff([]string{"CreateListener lb-b TCP 100..104 end=0"}, home.Log()); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	if !e.shared.isPending(cr.GetUID()) {
		t.Error("a pool with work left must be looked at again soon")
	}
	if got := e.shared.pollInterval(cr, time.Minute); got != progressPoll {
		t.Errorf("poll interval with work left = %s, want %s", got, progressPoll)
	}
}

func TestSyncOneWritePerLoadBalancer(t *testing.T) {
	home := fake.New("lb-a")
	cr := pool(onLBs("lb-a"), func(p *v1alpha1.PortPool) {
		p.Spec.ForProvider.Protocols = []string{"TCP", "UDP"}
		p.Spec.ForProvider.Listener = &v1alpha1.PoolListenerSettings{Scheduler: clb.Ptr("WRR")}
	})
	e := newExternal(t, home, nil)
	for range 3 {
		if err := reconcile(t, *e, cr); err != nil {
			t.Fatal(err)
		}
	}
	// Drift, and a listener of the pool that no slot wants.
	home.Listeners["lb-a"][0].Scheduler = clb.Ptr("LEAST_CONN")
	home.Listeners["lb-a"] = append(home.Listeners["lb-a"], listener("lbl-old", "ns_p-200", "TCP", 200, 0))
	for range 3 {
		if err := reconcile(t, *e, cr); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"CreateListener lb-a TCP 100..104 end=0",
		"CreateListener lb-a UDP 100..104 end=0",
		"DeleteListeners lb-a 1",
		"ModifyListener lb-a lbl-1",
	}
	if diff := cmp.Diff(want, home.Log()); diff != "" {
		t.Errorf("one write per reconcile: creates, then settings, then stale listeners: -want +got:\n%s", diff)
	}
	obs, _ := e.Observe(context.Background(), cr)
	if !obs.ResourceUpToDate || e.shared.isPending(cr.GetUID()) {
		t.Errorf("converged pool: %+v, pending %v", obs, e.shared.isPending(cr.GetUID()))
	}
}

func TestSyncKeepsBoundStaleListeners(t *testing.T) {
	home := fake.New("lb-a")
	home.Listeners["lb-a"] = []*clbsdk.Listener{listener("lbl-old", "ns_p-200", "TCP", 200, 0)}
	cr := pool(onLBs("lb-a"))
	e := newExternal(t, home, nil, podAddress("pod-0", networkv1alpha1.PortBinding{Pool: "ns/p", LoadBalancerID: "lb-a", Port: 200}))
	for range 3 {
		if err := reconcile(t, *e, cr); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range home.Log() {
		if strings.HasPrefix(w, "DeleteListeners") {
			t.Errorf("a listener a binding uses was deleted: %s", w)
		}
	}
}

func TestAutoCreate(t *testing.T) {
	home := fake.New()
	cr := pool(func(p *v1alpha1.PortPool) {
		p.Spec.ForProvider.AutoCreate = &v1alpha1.PoolAutoCreate{MaxLoadBalancers: 2, Template: v1alpha1.LoadBalancerParameters{Tags: map[string]string{"team": "t"}}}
	})
	e := newExternal(t, home, nil)
	for range 3 {
		if err := reconcile(t, *e, cr); err != nil {
			t.Fatal(err)
		}
	}
	if got := home.Log(); len(got) != 1 || !strings.HasPrefix(got[0], "CreateLoadBalancer lb-auto1 token=pp-uid-1-0-") {
		t.Fatalf("one load balancer while the first is being created: %v", got)
	}
	if c := cr.GetCondition(xpv2.TypeReady); c.Reason != xpv2.ReasonCreating {
		t.Errorf("Ready = %+v, want Creating", c)
	}
	// The load balancer is up: its listeners are made, and no other one.
	home.LBs["lb-auto1"].Status = clb.Ptr(uint64(1))
	for range 3 {
		if err := reconcile(t, *e, cr); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"CreateListener lb-auto1 TCP 100..104 end=0", "CreateLoadBalancer lb-auto1 token=pp-uid-1-0-" + shortHash("")}
	if diff := cmp.Diff(want, home.Log()); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	if s := cr.Status.AtProvider.LoadBalancers; len(s) != 1 || !s[0].AutoCreated || s[0].State != v1alpha1.PoolLBReady {
		t.Errorf("status: %+v", s)
	}
	// Deleting the pool deletes the load balancer it made.
	now := metav1.Now()
	cr.SetDeletionTimestamp(&now)
	e.obs = nil
	obs, err := e.Observe(context.Background(), cr)
	if err != nil || !obs.ResourceExists {
		t.Fatalf("Observe while deleting: %+v, %v", obs, err)
	}
	if _, err := e.Delete(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	if got := home.Log(); got[len(got)-1] != "DeleteLoadBalancer lb-auto1" {
		t.Errorf("writes: %v", got)
	}
}

func TestDeleteRefusedWithBindings(t *testing.T) {
	home := fake.New("lb-a")
	cr := pool(onLBs("lb-a"))
	e := newExternal(t, home, nil,
		podAddress("pod-0", networkv1alpha1.PortBinding{Pool: "ns/p", LoadBalancerID: "lb-a", Port: 100}),
		podAddress("pod-1", networkv1alpha1.PortBinding{Pool: "ns/p", LoadBalancerID: "lb-a", Port: 101}, networkv1alpha1.PortBinding{Pool: "ns/p", LoadBalancerID: "lb-a", Port: 102}),
	)
	if err := reconcile(t, *e, cr); err != nil {
		t.Fatal(err)
	}
	writes := len(home.Log())
	now := metav1.Now()
	cr.SetDeletionTimestamp(&now)
	e.obs = nil
	if _, err := e.Observe(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	_, err := e.Delete(context.Background(), cr)
	want := "pool ns/p still has 3 bindings; delete the Pods or their PodAddresses first"
	if err == nil || err.Error() != want {
		t.Errorf("Delete: %v, want %q", err, want)
	}
	if got := len(home.Log()); got != writes {
		t.Errorf("a refused delete wrote to the cloud: %v", home.Log()[writes:])
	}
}

func TestDeleteOnlyOwnListeners(t *testing.T) {
	home := fake.New("lb-a")
	cr := pool(onLBs("lb-a"))
	e := newExternal(t, home, nil)
	if err := reconcile(t, *e, cr); err != nil {
		t.Fatal(err)
	}
	home.Listeners["lb-a"] = append(home.Listeners["lb-a"], listener("lbl-theirs", "theirs", "TCP", 7000, 0))
	now := metav1.Now()
	cr.SetDeletionTimestamp(&now)
	e.obs = nil
	if _, err := e.Observe(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Delete(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	if ls := home.Listeners["lb-a"]; len(ls) != 1 || *ls[0].ListenerId != "lbl-theirs" {
		t.Errorf("after delete: %v", ls)
	}
	e.obs = nil
	if obs, err := e.Observe(context.Background(), cr); err != nil || obs.ResourceExists {
		t.Errorf("a pool with nothing left in the cloud is gone: %+v, %v", obs, err)
	}
}

func TestOtherRegion(t *testing.T) {
	home := fake.New()
	sh := fake.New("lb-sh")
	sh.Quota = 3
	cr := pool(onLBs("ap-shanghai:lb-sh"))
	e := newExternal(t, home, map[string]*fake.Cloud{"ap-shanghai": sh})
	for range 2 {
		if err := reconcile(t, *e, cr); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"CreateListener lb-sh TCP 100..102 end=0"}, sh.Log()); diff != "" {
		t.Errorf("the other region's client, capped by its quota of 3: -want +got:\n%s", diff)
	}
	if s := cr.Status.AtProvider.LoadBalancers; len(s) != 1 || s[0].Region != "ap-shanghai" || s[0].State != v1alpha1.PoolLBReady {
		t.Errorf("status: %+v", s)
	}

	cr = pool(onLBs("ap-nowhere:lb-x"))
	e = newExternal(t, home, nil)
	if _, err := e.Observe(context.Background(), cr); err == nil || !strings.Contains(err.Error(), "region ap-nowhere") {
		t.Errorf("an unknown region: %v", err)
	}
}

func TestQuotaCache(t *testing.T) {
	c := fake.New()
	now := time.Unix(0, 0)
	q := newQuotaCache(func() time.Time { return now })
	for range 3 {
		if v, err := q.listenerQuota(context.Background(), c); err != nil || v != 50 {
			t.Fatalf("quota %d, %v", v, err)
		}
	}
	if c.QuotaCalls != 1 {
		t.Errorf("%d DescribeQuota calls within the TTL, want 1", c.QuotaCalls)
	}
	now = now.Add(quotaTTL + time.Second)
	c.Quota = 100
	if v, _ := q.listenerQuota(context.Background(), c); v != 100 || c.QuotaCalls != 2 {
		t.Errorf("after the TTL: quota %d after %d calls, want 100 after 2", v, c.QuotaCalls)
	}
	now = now.Add(quotaTTL + time.Second)
	c.QuotaErr = fmt.Errorf("boom")
	if v, err := q.listenerQuota(context.Background(), c); err != nil || v != 100 {
		t.Errorf("a failed refresh keeps the last value: %d, %v", v, err)
	}
	if _, err := newQuotaCache(time.Now).listenerQuota(context.Background(), c); err == nil {
		t.Error("no value and a failed call is an error")
	}
}

func TestInvalidProtocols(t *testing.T) {
	cr := pool(onLBs("lb-a"), func(p *v1alpha1.PortPool) { p.Spec.ForProvider.Protocols = []string{"TCP", "TCP_SSL"} })
	e := newExternal(t, fake.New("lb-a"), nil)
	if _, err := e.Observe(context.Background(), cr); err == nil || !strings.Contains(err.Error(), "invalid pool: protocols TCP and TCP_SSL") {
		t.Errorf("Observe: %v", err)
	}
}
