package allocation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	pkgerrors "github.com/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/portalloc"
)

// The pool most tests allocate in: PortPool web of namespace team-a.
const (
	poolNS   = "team-a"
	poolName = "web"
	poolKey  = poolNS + "/" + poolName
)

var errBoom = errors.New("boom")

func kubeScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, v1alpha1.AddToScheme, clbv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// newKube is a fake API server holding objs, with the PodAddresses indexed
// by pool as the manager indexes them, and funcs' errors injected.
func newKube(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	return kfake.NewClientBuilder().WithScheme(kubeScheme(t)).WithObjects(objs...).
		WithIndex(&v1alpha1.PodAddress{}, v1alpha1.PoolIndex, v1alpha1.PoolsOf).
		WithInterceptorFuncs(funcs).Build()
}

// failGet fails the Get of objects of like's type.
func failGet(like client.Object, err error) interceptor.Funcs {
	return interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if fmt.Sprintf("%T", obj) == fmt.Sprintf("%T", like) {
			return err
		}
		return c.Get(ctx, key, obj, opts...)
	}}
}

// listenerID is the id the pools' status gives listener proto/port of lb.
func listenerID(lb, proto string, port int32) string {
	return fmt.Sprintf("lbl-%s-%s-%d", lb, proto, port)
}

// lbStatus is load balancer id of a pool in state, with a listener of each
// protocol on each port.
func lbStatus(id, state string, protocols []string, ports ...int32) clbv1alpha1.PoolLoadBalancerStatus {
	lb := clbv1alpha1.PoolLoadBalancerStatus{ID: id, State: state, Name: "name-" + id, Type: "OPEN", Region: "ap-guangzhou",
		ISP: "BGP", VIPs: []string{"203.0.113.1"}, Hostname: id + ".example", AddressIPVersion: "ipv4", Listeners: map[string]string{}}
	for _, p := range ports {
		for _, proto := range protocols {
			lb.Listeners[clbv1alpha1.ListenerKey{Protocol: proto, Port: p}.String()] = listenerID(id, proto, p)
		}
	}
	return lb
}

// portPool is PortPool team-a/web (ports from 100) of lbs.
func portPool(lbs ...clbv1alpha1.PoolLoadBalancerStatus) *clbv1alpha1.PortPool {
	pp := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: poolNS, Name: poolName, UID: "uid-1"}}
	pp.Spec.ForProvider.StartPort = 100
	pp.Spec.ForProvider.EndPort = 199
	pp.Status.AtProvider.LoadBalancers = lbs
	return pp
}

// podAddress is PodAddress ns/name, Bound with bs in its status.
func podAddress(ns, name string, bs ...v1alpha1.PortBinding) *v1alpha1.PodAddress {
	pa := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if len(bs) > 0 {
		pa.Status.State = v1alpha1.StateBound
		pa.Status.Bindings = bs
	}
	return pa
}

// held is a binding of container port 80/TCP on lb's port in the pool.
func held(lb string, port int32) v1alpha1.PortBinding {
	return v1alpha1.PortBinding{Pool: poolKey, Protocol: "TCP", ContainerPort: 80, LoadBalancerID: lb, Port: port,
		ListenerIDs: map[string]string{"TCP": listenerID(lb, "TCP", port)}}
}

// usageLog records what Pools tell their usage func, as
// "pool lb allocated/free" per load balancer.
type usageLog struct {
	mu    sync.Mutex
	calls []string
}

func (u *usageLog) record(pool string, lbs []portalloc.LBStats) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, st := range lbs {
		u.calls = append(u.calls, fmt.Sprintf("%s %s %d/%d", pool, st.LB, st.Allocated, st.Free))
	}
}

func (u *usageLog) take() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := u.calls
	u.calls = nil
	return out
}

// ports are n consecutive ports from first.
func ports(first int32, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = first + int32(i) //nolint:gosec // G115: test ports.
	}
	return out
}

// TestGet: the allocator of a pool is rebuilt from the recorded bindings
// the first time, follows the pool's status as its resourceVersion
// changes, and is forgotten with the pool.
func TestGet(t *testing.T) {
	ctx := context.Background()
	tcp := []string{"TCP"}
	a := "team-a"
	createRecord := podAddress(a, "fresh")
	if err := v1alpha1.SetCreatedBindings(createRecord, []v1alpha1.PortBinding{held("lb-1", 103)}); err != nil {
		t.Fatal(err)
	}
	createRecord.Spec.Ports = []v1alpha1.PortRequest{{Pools: []v1alpha1.PoolRef{{Name: poolName}}}}

	type want struct {
		err      string
		notFound bool
		owners   map[string]portalloc.Slot // owner → slot the allocator has
		free     []portalloc.Slot          // slots that a new owner could be given
		usage    []string
	}
	cases := map[string]struct {
		reason string
		key    string
		funcs  interceptor.Funcs
		objs   []client.Object
		want   want
	}{
		"NoSuchKey": {
			reason: "A key the provider never writes names no pool.",
			key:    "no-slash",
			want:   want{err: `cannot get PortPool no-slash: portpools.clb.tencentcloud.m.crossplane.io "no-slash" not found`, notFound: true},
		},
		"PoolMissing": {
			reason: "A pool that does not exist is NotFound, wrapped.",
			key:    poolKey,
			want:   want{err: "cannot get PortPool " + poolKey + `: portpools.clb.tencentcloud.m.crossplane.io "web" not found`, notFound: true},
		},
		"ReadError": {
			reason: "A pool that cannot be read is an error, not NotFound.",
			key:    poolKey,
			funcs:  failGet(&clbv1alpha1.PortPool{}, errBoom),
			objs:   []client.Object{portPool(lbStatus("lb-1", clbv1alpha1.PoolLBReady, tcp, 100))},
			want:   want{err: "cannot get PortPool " + poolKey + ": boom"},
		},
		"ListError": {
			reason: "A pool whose bindings cannot be listed is not loaded: nothing could be allocated safely.",
			key:    poolKey,
			funcs: interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
				return errBoom
			}},
			objs: []client.Object{portPool(lbStatus("lb-1", clbv1alpha1.PoolLBReady, tcp, 100))},
			want: want{err: "cannot list the bindings of pool " + poolKey + ": boom"},
		},
		"Rebuilt": {
			reason: "Every binding a status or a create record holds in the pool is taken; other pools' are not, and a slot claimed twice goes to one owner.",
			key:    poolKey,
			objs: []client.Object{
				portPool(lbStatus("lb-1", clbv1alpha1.PoolLBReady, tcp, 100, 101, 102, 103, 104)),
				podAddress(a, "p0", held("lb-1", 100), v1alpha1.PortBinding{Pool: "team-a/other", Protocol: "TCP", ContainerPort: 81, LoadBalancerID: "lb-1", Port: 101}),
				podAddress("team-b", "p1", held("lb-1", 102)),
				podAddress("team-b", "p2", held("lb-1", 102)),
				createRecord,
			},
			want: want{
				owners: map[string]portalloc.Slot{
					"team-a/p0#80/TCP":    {LB: "lb-1", Port: 100},
					"team-b/p1#80/TCP":    {LB: "lb-1", Port: 102},
					"team-a/fresh#80/TCP": {LB: "lb-1", Port: 103},
				},
				free:  []portalloc.Slot{{LB: "lb-1", Port: 101}, {LB: "lb-1", Port: 104}},
				usage: []string{poolKey + " lb-1 3/2"},
			},
		},
		"StatusApplied": {
			reason: "Only ports with a listener of every protocol, on load balancers that take bindings and are not blacklisted, are free.",
			key:    poolKey,
			objs: []client.Object{func() client.Object {
				pp := portPool(
					lbStatus("lb-1", clbv1alpha1.PoolLBReady, []string{"TCP", "UDP"}, 100),
					lbStatus("lb-2", clbv1alpha1.PoolLBDraining, []string{"TCP", "UDP"}, 100),
					lbStatus("lb-3", clbv1alpha1.PoolLBReady, []string{"TCP", "UDP"}, 100),
				)
				pp.Status.AtProvider.LoadBalancers[0].Listeners["TCP/101"] = "lbl-tcp-only"
				pp.Spec.ForProvider.Protocols = []string{"TCP", "UDP"}
				pp.Spec.ForProvider.Blacklist = []string{"ap-shanghai:lb-3"}
				return pp
			}()},
			want: want{
				owners: map[string]portalloc.Slot{},
				free:   []portalloc.Slot{{LB: "lb-1", Port: 100}},
				usage:  []string{poolKey + " lb-1 0/1", poolKey + " lb-2 0/0", poolKey + " lb-3 0/0"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := &usageLog{}
			p := NewPools(newKube(t, tc.funcs, tc.objs...), u.record)
			al, pp, err := p.Get(ctx, tc.key)
			if tc.want.err != "" {
				if err == nil || err.Error() != tc.want.err {
					t.Fatalf("%s\nGet(...): error %v, want %q", tc.reason, err, tc.want.err)
				}
				if kerrors.IsNotFound(pkgerrors.Cause(err)) != tc.want.notFound {
					t.Errorf("%s\nGet(...): NotFound = %t, want %t", tc.reason, !tc.want.notFound, tc.want.notFound)
				}
				if _, ok := p.registry.Get(tc.key); ok {
					t.Errorf("%s\nGet(...) failed but left an allocator for the pool", tc.reason)
				}
				if _, ok := p.loaded(tc.key); ok {
					t.Errorf("%s\nGet(...) failed but the pool counts as loaded", tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nGet(...): %v", tc.reason, err)
			}
			if pp.GetName() != poolName {
				t.Errorf("%s\nGet(...) returned PortPool %s", tc.reason, pp.GetName())
			}
			got := map[string]portalloc.Slot{}
			for o := range tc.want.owners {
				if s, ok := al.Lookup(o); ok {
					got[o] = s
				}
			}
			if diff := cmp.Diff(tc.want.owners, got); diff != "" {
				t.Errorf("%s\nowners: -want, +got:\n%s", tc.reason, diff)
			}
			if _, ok := al.Lookup("team-b/p2#80/TCP"); ok {
				t.Errorf("%s\nthe second claim of a slot was recorded too", tc.reason)
			}
			var free []portalloc.Slot
			for i := 0; ; i++ {
				s, err := al.Allocate(fmt.Sprintf("probe/p%d#1/TCP", i))
				if err != nil {
					break
				}
				free = append(free, s)
			}
			slices.SortFunc(free, func(x, y portalloc.Slot) int { return strings.Compare(fmt.Sprint(x), fmt.Sprint(y)) })
			if diff := cmp.Diff(tc.want.free, free); diff != "" {
				t.Errorf("%s\nfree slots: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.usage, u.take()); diff != "" {
				t.Errorf("%s\nusage: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestGetFollowsPool: a second Get of an unchanged pool neither rebuilds
// nor reports usage; a changed status is applied (a load balancer no
// longer listed leaves); a pool made again (another UID) starts afresh; a
// pool gone is forgotten.
func TestGetFollowsPool(t *testing.T) {
	ctx := context.Background()
	tcp := []string{"TCP"}
	pp := portPool(lbStatus("lb-1", clbv1alpha1.PoolLBReady, tcp, 100), lbStatus("lb-2", clbv1alpha1.PoolLBReady, tcp, 100))
	lists := 0
	kube := newKube(t, interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
		lists++
		return c.List(ctx, l, opts...)
	}}, pp, podAddress("team-b", "p1", held("lb-2", 100)))
	u := &usageLog{}
	p := NewPools(kube, u.record)

	al, _, err := p.Get(ctx, poolKey)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := al.Allocate("team-a/new#80/TCP"); s != (portalloc.Slot{LB: "lb-1", Port: 100}) {
		t.Fatalf("Allocate = %v, want the free slot of lb-1", s)
	}
	u.take()
	if again, _, err := p.Get(ctx, poolKey); err != nil || again != al {
		t.Fatalf("a second Get = %p, %v; want the same allocator %p", again, err, al)
	}
	if lists != 1 || len(u.take()) != 0 {
		t.Errorf("an unchanged pool was listed %d times (want 1) or its usage reported again", lists)
	}

	// lb-2 leaves the pool's status: its owner keeps nothing there.
	cur := &clbv1alpha1.PortPool{}
	if err := kube.Get(ctx, types.NamespacedName{Namespace: poolNS, Name: poolName}, cur); err != nil {
		t.Fatal(err)
	}
	cur.Status.AtProvider.LoadBalancers = cur.Status.AtProvider.LoadBalancers[:1]
	policy := clbv1alpha1.PolicyInOrder
	cur.Spec.ForProvider.AllocationPolicy = &policy
	if err := kube.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Get(ctx, poolKey); err != nil {
		t.Fatal(err)
	}
	if _, ok := al.Lookup("team-b/p1#80/TCP"); ok {
		t.Error("an owner kept its slot on a load balancer the pool no longer lists")
	}
	if diff := cmp.Diff([]string{poolKey + " lb-1 1/0"}, u.take()); diff != "" {
		t.Errorf("usage after the status changed: -want, +got:\n%s", diff)
	}

	// The pool is made again: the allocator of the old one is dropped.
	cur.SetUID("uid-2")
	if err := kube.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	fresh, _, err := p.Get(ctx, poolKey)
	if err != nil {
		t.Fatal(err)
	}
	if fresh == al {
		t.Fatal("a pool made again kept the allocator of the one before")
	}
	if _, ok := fresh.Lookup("team-a/new#80/TCP"); ok {
		t.Error("a pool made again kept the slots of the one before")
	}

	// The pool goes: its state goes with it.
	if err := kube.Delete(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Get(ctx, poolKey); !kerrors.IsNotFound(pkgerrors.Cause(err)) {
		t.Fatalf("Get of a deleted pool: %v, want NotFound", err)
	}
	if _, ok := p.registry.Get(poolKey); ok {
		t.Error("a deleted pool's allocator was kept")
	}
	if _, ok := p.loaded(poolKey); ok {
		t.Error("a deleted pool still counts as loaded")
	}
}

// TestRelease: every binding's slot is given back and its pool's usage
// reported; a pool that is gone is skipped; one that cannot be read stops
// the release with its error.
func TestRelease(t *testing.T) {
	ctx := context.Background()
	tcp := []string{"TCP"}
	pa := podAddress(poolNS, "p0", held("lb-1", 100),
		v1alpha1.PortBinding{Pool: "team-a/gone", Protocol: "TCP", ContainerPort: 81, LoadBalancerID: "lb-9", Port: 100})
	cases := map[string]struct {
		reason string
		funcs  interceptor.Funcs
		err    string
		freed  bool
		usage  []string
	}{
		"Released": {
			reason: "The slot is free again, the usage says so, and the missing pool is no error.",
			freed:  true,
			usage:  []string{poolKey + " lb-1 0/1"},
		},
		"PoolUnreadable": {
			reason: "A pool that cannot be read keeps its slots: they may not be handed out twice.",
			funcs:  failGet(&clbv1alpha1.PortPool{}, errBoom),
			err:    "cannot get PortPool " + poolKey + ": boom",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ok := newKube(t, interceptor.Funcs{}, portPool(lbStatus("lb-1", clbv1alpha1.PoolLBReady, tcp, 100)), pa)
			p := NewPools(ok, func(string, []portalloc.LBStats) {})
			al, _, err := p.Get(ctx, poolKey)
			if err != nil {
				t.Fatal(err)
			}
			u := &usageLog{}
			p.usage = u.record
			if tc.funcs.Get != nil {
				p.kube = newKube(t, tc.funcs, portPool(lbStatus("lb-1", clbv1alpha1.PoolLBReady, tcp, 100)))
			}
			err = p.Release(ctx, pa)
			if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
				t.Fatalf("%s\nRelease(...): %v, want %q", tc.reason, err, tc.err)
			}
			_, still := al.Lookup("team-a/p0#80/TCP")
			if still == tc.freed {
				t.Errorf("%s\nafter Release the owner holds its slot: %t, want %t", tc.reason, still, !tc.freed)
			}
			if diff := cmp.Diff(tc.usage, u.take()); diff != "" {
				t.Errorf("%s\nusage: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestRead: a pool is read by its key, never by anything else.
func TestRead(t *testing.T) {
	ctx := context.Background()
	kube := newKube(t, interceptor.Funcs{}, portPool())
	if pp, err := Read(ctx, kube, poolKey); err != nil || pp.GetUID() != "uid-1" {
		t.Errorf("Read(%q) = %v, %v", poolKey, pp, err)
	}
	for _, key := range []string{"", "team-a", "team-a/", "/web", "team-a/web/x"} {
		if _, err := Read(ctx, kube, key); !kerrors.IsNotFound(err) {
			t.Errorf("Read(%q): %v, want NotFound", key, err)
		}
	}
}

// TestDeparted: a binding has departed when its load balancer is no
// longer listed or takes no bindings, or a listener of its protocols is
// gone; a binding of another pool says nothing about this one.
func TestDeparted(t *testing.T) {
	pp := portPool(
		lbStatus("lb-1", clbv1alpha1.PoolLBReady, []string{"TCP", "UDP"}, 100),
		lbStatus("lb-2", clbv1alpha1.PoolLBDraining, []string{"TCP"}, 100),
		lbStatus("lb-3", clbv1alpha1.PoolLBBlacklisted, []string{"TCP"}, 100),
	)
	tcpUDP := held("lb-1", 100)
	tcpUDP.Protocol = v1alpha1.ProtocolTCPUDP
	tcpUDP.ListenerIDs["UDP"] = listenerID("lb-1", "UDP", 100)
	noUDP := tcpUDP
	noUDP.ListenerIDs = map[string]string{"TCP": listenerID("lb-1", "TCP", 100)}
	other := held("lb-9", 100)
	other.Pool = "team-a/other"
	cases := map[string]struct {
		b    v1alpha1.PortBinding
		want bool
	}{
		"Ready":             {held("lb-1", 100), false},
		"ReadyBothProtocol": {tcpUDP, false},
		"ListenerMissing":   {noUDP, true},
		"Draining":          {held("lb-2", 100), true},
		"Blacklisted":       {held("lb-3", 100), false},
		"NotListed":         {held("lb-4", 100), true},
		"OtherPool":         {other, false},
	}
	for name, tc := range cases {
		if got := Departed(pp, tc.b); got != tc.want {
			t.Errorf("%s: Departed = %t, want %t", name, got, tc.want)
		}
	}
	if !AnyDeparted(pp, []v1alpha1.PortBinding{held("lb-1", 100), held("lb-2", 100)}) {
		t.Error("AnyDeparted missed the binding on a draining load balancer")
	}
	if AnyDeparted(pp, []v1alpha1.PortBinding{held("lb-1", 100), other}) {
		t.Error("AnyDeparted found a departure where there is none")
	}
}
