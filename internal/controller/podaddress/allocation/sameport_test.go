package allocation

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/portalloc"
)

// The pools of the same-port tests: one per ISP, as in tke-extend's
// multi-ISP guide, in namespace team-a.
const (
	ctcc = poolNS + "/ctcc"
	cmcc = poolNS + "/cmcc"
	bgp  = poolNS + "/bgp"
)

// ispPool is PortPool key with ports start-end and lbs (8000/UDP
// listeners on their ports), tweaked by mods.
func ispPool(key string, start, end int64, lbs []clbv1alpha1.PoolLoadBalancerStatus, mods ...func(*clbv1alpha1.PortPool)) *clbv1alpha1.PortPool {
	ns, name, _ := strings.Cut(key, "/")
	pp := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
	pp.Spec.ForProvider.StartPort, pp.Spec.ForProvider.EndPort = start, end
	pp.Spec.ForProvider.Protocols = []string{"UDP"}
	pp.Status.AtProvider.LoadBalancers = lbs
	for _, m := range mods {
		m(pp)
	}
	return pp
}

func udpLB(id string, ports ...int32) clbv1alpha1.PoolLoadBalancerStatus {
	return lbStatus(id, clbv1alpha1.PoolLBReady, []string{"UDP"}, ports...)
}

func segments(n int64) func(*clbv1alpha1.PortPool) {
	return func(pp *clbv1alpha1.PortPool) { pp.Spec.ForProvider.SegmentLength = &n }
}

// same is port 8000/UDP of a Pod in pool, asked with the same port in all
// of its pools.
func same(pool string) Port {
	return Port{Pool: pool, ContainerPort: 8000, Protocol: "UDP", SamePort: true}
}

// in is a binding of 8000/UDP in pool on lb's port.
func in(pool, lb string, port int32) v1alpha1.PortBinding {
	return v1alpha1.PortBinding{Pool: pool, Protocol: "UDP", ContainerPort: 8000, LoadBalancerID: lb, Port: port,
		ListenerIDs: map[string]string{"UDP": listenerID(lb, "UDP", port)}}
}

// failGetOf fails the Get of PortPool key.
func failGetOf(key string, err error) interceptor.Funcs {
	return interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*clbv1alpha1.PortPool); ok && k.String() == key {
			return err
		}
		return c.Get(ctx, k, obj, opts...)
	}}
}

// TestAllocateSamePort: a same-port group takes the lowest port free in
// every pool, in all of them or none, each pool's load balancer by its
// policy; a port it holds fixes the port; pools that can never share a
// port are Invalid; a pool that fails, is missing or full takes nothing
// anywhere.
func TestAllocateSamePort(t *testing.T) {
	ctx := context.Background()
	one := int64(1)
	group := []Port{same(ctcc), same(cmcc)}
	type slot struct {
		Pool, LB string
		Port     int32
	}
	cases := map[string]struct {
		reason string
		objs   []client.Object
		funcs  interceptor.Funcs
		pa     *v1alpha1.PodAddress
		g      []Port
		have   []v1alpha1.PortBinding
		want   []slot // the bindings returned, in order
		state  string
		err    string
		holds  []slot // the slots the owner holds afterwards; nil: none
	}{
		"LowestCommon": {
			reason: "The lowest port free in both pools: 100 is taken in ctcc, 101 in cmcc.",
			objs: []client.Object{
				ispPool(ctcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 5)...)}),
				ispPool(cmcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", ports(100, 5)...)}),
				podAddress(poolNS, "other", in(ctcc, "lb-c1", 100), in(cmcc, "lb-m1", 101)),
			},
			g:     group,
			want:  []slot{{ctcc, "lb-c1", 102}, {cmcc, "lb-m1", 102}},
			holds: []slot{{ctcc, "lb-c1", 102}, {cmcc, "lb-m1", 102}},
		},
		"PolicyPicksTheLoadBalancer": {
			reason: "Among the load balancers where the common port is free, each pool's policy picks: LeastUsed takes lb-c2 for port 100.",
			objs: []client.Object{
				ispPool(ctcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 5)...), udpLB("lb-c2", ports(100, 5)...)}),
				ispPool(cmcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", ports(100, 5)...)}),
				podAddress(poolNS, "other", in(ctcc, "lb-c1", 104)),
			},
			g:     group,
			want:  []slot{{ctcc, "lb-c2", 100}, {cmcc, "lb-m1", 100}},
			holds: []slot{{ctcc, "lb-c2", 100}, {cmcc, "lb-m1", 100}},
		},
		"DifferentStartsShareSlots": {
			reason: "Pools whose ranges overlap in part share the ports of the overlap: the first is 103.",
			objs: []client.Object{
				ispPool(ctcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 5)...)}),
				ispPool(cmcc, 103, 107, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", ports(103, 5)...)}),
			},
			g:     group,
			want:  []slot{{ctcc, "lb-c1", 103}, {cmcc, "lb-m1", 103}},
			holds: []slot{{ctcc, "lb-c1", 103}, {cmcc, "lb-m1", 103}},
		},
		"LongSegments": {
			reason: "Segments of 10001 ports (tke-extend's multi-ISP HostPort guide): the first common segment, and its end port.",
			objs: []client.Object{
				ispPool(ctcc, 30000, 60002, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", 30000, 40001, 50002)}, segments(10001)),
				ispPool(cmcc, 30000, 60002, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", 30000, 40001, 50002)}, segments(10001)),
				podAddress(poolNS, "other", in(cmcc, "lb-m1", 30000)),
			},
			g:     group,
			want:  []slot{{ctcc, "lb-c1", 40001}, {cmcc, "lb-m1", 40001}},
			holds: []slot{{ctcc, "lb-c1", 40001}, {cmcc, "lb-m1", 40001}},
		},
		"NoOverlap": {
			reason: "Pools whose ports do not overlap can never give one port: Invalid, naming the ranges.",
			objs: []client.Object{
				ispPool(ctcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 5)...)}),
				ispPool(cmcc, 200, 204, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", ports(200, 5)...)}),
			},
			g:     group,
			state: v1alpha1.StateInvalid,
			err:   "their ports do not overlap (team-a/ctcc 100-104, team-a/cmcc 200-204",
		},
		"QuotaCapsTheOverlap": {
			reason: "The ranges overlap in the spec, but the listener quota keeps each pool to its first 5 slots, which do not.",
			objs: []client.Object{
				ispPool(ctcc, 100, 199, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 5)...)},
					func(pp *clbv1alpha1.PortPool) { pp.Status.AtProvider.SlotsPerLoadBalancer = 5 }),
				ispPool(cmcc, 150, 199, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", ports(150, 5)...)},
					func(pp *clbv1alpha1.PortPool) { pp.Status.AtProvider.SlotsPerLoadBalancer = 5 }),
			},
			g:     group,
			state: v1alpha1.StateInvalid,
			err:   "(team-a/ctcc 100-104, team-a/cmcc 150-154, each capped by the listeners its load balancers can hold)",
		},
		"SegmentsDiffer": {
			reason: "A port starts a slot in both pools only with one segment length.",
			objs: []client.Object{
				ispPool(ctcc, 100, 109, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", 100, 105)}, segments(5)),
				ispPool(cmcc, 100, 109, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", 100, 102, 104, 106, 108)}, segments(2)),
			},
			g:     group,
			state: v1alpha1.StateInvalid,
			err:   "pool team-a/ctcc has segments of 5 ports and pool team-a/cmcc of 2",
		},
		"SegmentsNeverLineUp": {
			reason: "Segments of 2 from 100 and from 101 share no start port.",
			objs: []client.Object{
				ispPool(ctcc, 100, 109, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", 100, 102)}, segments(2)),
				ispPool(cmcc, 101, 110, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", 101, 103)}, segments(2)),
			},
			g:     group,
			state: v1alpha1.StateInvalid,
			err:   "their segments never line up: pool team-a/ctcc starts at 100, pool team-a/cmcc at 101",
		},
		"NoCommonFreePort": {
			reason: "Each pool has a free port, but not the same one: NoPortAvailable with the free counts, nothing taken.",
			objs: []client.Object{
				ispPool(ctcc, 100, 101, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", 100, 101)}),
				ispPool(cmcc, 100, 101, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", 100, 101)}),
				podAddress(poolNS, "other", in(ctcc, "lb-c1", 100), in(cmcc, "lb-m1", 101)),
			},
			g:     group,
			state: v1alpha1.StateNoPortAvailable,
			err:   "no port is free in all of them (free ports: team-a/ctcc 1, team-a/cmcc 1): " + portalloc.ErrNoPortAvailable.Error(),
		},
		"SecondPoolMissing": {
			reason: "A pool that does not exist: PoolNotFound, and the first pool keeps nothing.",
			objs: []client.Object{
				ispPool(ctcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 5)...)}),
			},
			g:     group,
			state: v1alpha1.StatePoolNotFound,
			err:   "PortPool team-a/cmcc does not exist",
		},
		"SecondPoolUnreadable": {
			reason: "A pool that cannot be read: Pending with the error, and the first pool keeps nothing.",
			objs: []client.Object{
				ispPool(ctcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 5)...)}),
				ispPool(cmcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", ports(100, 5)...)}),
			},
			funcs: failGetOf(cmcc, errBoom),
			g:     group,
			state: v1alpha1.StatePending,
			err:   "boom",
		},
		"SecondPoolNamespaceFull": {
			reason: "The namespace holds all cmcc lets it: the port is taken in ctcc, refused in cmcc, and given back in ctcc.",
			objs: []client.Object{
				ispPool(ctcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 5)...)}),
				ispPool(cmcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", ports(100, 5)...)},
					func(pp *clbv1alpha1.PortPool) {
						pp.Spec.Consumers = &clbv1alpha1.PoolConsumers{MaxBindingsPerNamespace: &one}
					}),
				podAddress(poolNS, "other", in(cmcc, "lb-m1", 104)),
			},
			g:     group,
			state: v1alpha1.StateNoPortAvailable,
			err:   "pool team-a/cmcc: the Pods of namespace team-a hold 1 of its ports",
		},
		"HeldPortFixesIt": {
			reason: "A binding the status records fixes the port: the pool without one takes the same port, on whichever load balancer has it free.",
			objs: []client.Object{
				ispPool(ctcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 5)...)}),
				ispPool(cmcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", ports(100, 5)...), udpLB("lb-m2", ports(100, 5)...)}),
				podAddress(poolNS, "p0", in(ctcc, "lb-c1", 103)),
				podAddress(poolNS, "other", in(cmcc, "lb-m1", 103)),
			},
			g:     group,
			have:  []v1alpha1.PortBinding{in(ctcc, "lb-c1", 103)},
			want:  []slot{{cmcc, "lb-m2", 103}},
			holds: []slot{{ctcc, "lb-c1", 103}, {cmcc, "lb-m2", 103}},
		},
		"HeldPortTakenThere": {
			reason: "The held port is taken in the pool that lacks it: NoPortAvailable saying so; the held binding stays.",
			objs: []client.Object{
				ispPool(ctcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 5)...)}),
				ispPool(cmcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", ports(100, 5)...)}),
				podAddress(poolNS, "p0", in(ctcc, "lb-c1", 103)),
				podAddress(poolNS, "other", in(cmcc, "lb-m1", 103)),
			},
			g:     group,
			have:  []v1alpha1.PortBinding{in(ctcc, "lb-c1", 103)},
			state: v1alpha1.StateNoPortAvailable,
			err:   "port 8000/UDP holds public port 103 in pool team-a/ctcc and asks for the same port in every pool (useSamePortAcrossPools), but pool team-a/cmcc cannot give it",
			holds: []slot{{ctcc, "lb-c1", 103}},
		},
		"Ordinal": {
			reason: "With the Ordinal strategy the port is startPort + ordinal in every pool.",
			objs: []client.Object{
				ispPool(ctcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 5)...)}),
				ispPool(cmcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", ports(100, 5)...)}),
			},
			pa: func() *v1alpha1.PodAddress {
				pa := podAddress(poolNS, "gs-3")
				pa.Spec.Strategy = v1alpha1.StrategyOrdinal
				return pa
			}(),
			g:     group,
			want:  []slot{{ctcc, "lb-c1", 103}, {cmcc, "lb-m1", 103}},
			holds: []slot{{ctcc, "lb-c1", 103}, {cmcc, "lb-m1", 103}},
		},
		"OrdinalStartsDiffer": {
			reason: "With the Ordinal strategy, pools of different start ports would give different ports: Invalid.",
			objs: []client.Object{
				ispPool(ctcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 5)...)}),
				ispPool(cmcc, 101, 105, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", ports(101, 5)...)}),
			},
			pa: func() *v1alpha1.PodAddress {
				pa := podAddress(poolNS, "gs-3")
				pa.Spec.Strategy = v1alpha1.StrategyOrdinal
				return pa
			}(),
			g:     group,
			state: v1alpha1.StateInvalid,
			err:   "pool team-a/ctcc starts at 100, pool team-a/cmcc at 101: give them the same startPort",
		},
		"NotSamePort": {
			reason: "Without the option each pool picks its own port.",
			objs: []client.Object{
				ispPool(ctcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 5)...)}),
				ispPool(cmcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", ports(100, 5)...)}),
				podAddress(poolNS, "other", in(ctcc, "lb-c1", 100)),
			},
			g:     []Port{{Pool: ctcc, ContainerPort: 8000, Protocol: "UDP"}},
			want:  []slot{{ctcc, "lb-c1", 101}},
			holds: []slot{{ctcc, "lb-c1", 101}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pa := tc.pa
			if pa == nil {
				pa = podAddress(poolNS, "p0", tc.have...)
			}
			p := NewPools(newKube(t, tc.funcs, tc.objs...), func(string, []portalloc.LBStats) {})
			r := p.Reserve(pa)
			bs, state, err := r.AllocateGroup(ctx, tc.g, tc.have)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("%s\nAllocateGroup(...): error %v, want %q", tc.reason, err, tc.err)
			}
			if state != tc.state {
				t.Errorf("%s\nAllocateGroup(...): state %q, want %q", tc.reason, state, tc.state)
			}
			var got []slot
			for _, b := range bs {
				got = append(got, slot{b.Pool, b.LoadBalancerID, b.Port})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nbindings: -want, +got:\n%s", tc.reason, diff)
			}
			// What the owner holds, in every pool of the case.
			var holds []slot
			for _, w := range []string{ctcc, cmcc} {
				al, ok := p.loaded(w)
				if !ok {
					continue
				}
				if s, ok := al.Lookup(owner(client.ObjectKeyFromObject(pa), 8000, "UDP")); ok {
					holds = append(holds, slot{w, s.LB, s.Port})
				}
			}
			if diff := cmp.Diff(tc.holds, holds); diff != "" {
				t.Errorf("%s\nslots held afterwards: -want, +got:\n%s", tc.reason, diff)
			}
			// Dropped, the reservation gives back what it took and keeps
			// what the status records.
			r.Drop()
			for _, w := range []string{ctcc, cmcc} {
				al, ok := p.loaded(w)
				if !ok {
					continue
				}
				_, held := al.Lookup(owner(client.ObjectKeyFromObject(pa), 8000, "UDP"))
				recorded := false
				for _, b := range tc.have {
					recorded = recorded || b.Pool == w
				}
				if held != recorded {
					t.Errorf("%s\nafter Drop, pool %s holds a slot: %t, want %t (recorded in the status)", tc.reason, w, held, recorded)
				}
			}
		})
	}
}

// TestAllocateAllSamePort: preallocation and admission take a same-port
// group as one, and give the bindings in the order of the ports.
func TestAllocateAllSamePort(t *testing.T) {
	ctx := context.Background()
	pa := podAddress(poolNS, "p0")
	p := NewPools(newKube(t, interceptor.Funcs{},
		ispPool(ctcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 5)...)}),
		ispPool(cmcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", ports(100, 5)...)}),
		ispPool(bgp, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-b1", ports(100, 5)...)}),
		podAddress(poolNS, "other", in(ctcc, "lb-c1", 100), in(cmcc, "lb-m1", 101)),
	), func(string, []portalloc.LBStats) {})
	voice := Port{Pool: bgp, ContainerPort: 9000, Protocol: "UDP"}
	r := p.Reserve(pa)
	bs, err := r.AllocateAll(ctx, []Port{same(ctcc), voice, same(cmcc)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range bs {
		got = append(got, fmt.Sprintf("%s %d %d", b.Pool, b.ContainerPort, b.Port))
	}
	want := []string{ctcc + " 8000 102", bgp + " 9000 100", cmcc + " 8000 102"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("AllocateAll: -want, +got:\n%s", diff)
	}
	if len(r.fresh) != 3 {
		t.Errorf("the reservation holds %d new slots, want 3", len(r.fresh))
	}
}

// TestAllocateSamePortConcurrent: same-port groups allocated at once with
// single ports of one pool never end with different ports, never share a
// slot, and leave nothing behind when they fail.
func TestAllocateSamePortConcurrent(t *testing.T) {
	ctx := context.Background()
	p := NewPools(newKube(t, interceptor.Funcs{},
		ispPool(ctcc, 100, 139, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 20)...), udpLB("lb-c2", ports(120, 20)...)}),
		ispPool(cmcc, 100, 139, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", ports(100, 40)...)}),
	), func(string, []portalloc.LBStats) {})
	const groups, singles = 30, 15
	type result struct {
		bs  []v1alpha1.PortBinding
		err error
	}
	results := make([]result, groups+singles)
	var wg sync.WaitGroup
	for i := range groups + singles {
		wg.Go(func() {
			g := []Port{same(ctcc), same(cmcc)}
			if i >= groups {
				g = []Port{{Pool: cmcc, ContainerPort: 8000, Protocol: "UDP"}}
			}
			r := p.Reserve(podAddress(poolNS, fmt.Sprintf("p%d", i)))
			bs, _, err := r.AllocateGroup(ctx, g, nil)
			r.Commit()
			results[i] = result{bs, err}
		})
	}
	wg.Wait()
	taken := map[string]string{}
	okGroups, okSingles := 0, 0
	for i, res := range results {
		if res.err != nil {
			if !strings.Contains(res.err.Error(), portalloc.ErrNoPortAvailable.Error()) {
				t.Errorf("p%d: %v", i, res.err)
			}
			continue
		}
		if i < groups {
			okGroups++
			if len(res.bs) != 2 || res.bs[0].Port != res.bs[1].Port {
				t.Errorf("p%d: bindings %+v, want one port in both pools", i, res.bs)
			}
		} else {
			okSingles++
		}
		for _, b := range res.bs {
			k := fmt.Sprintf("%s %s %d", b.Pool, b.LoadBalancerID, b.Port)
			if other, dup := taken[k]; dup {
				t.Errorf("%s given to p%d and %s", k, i, other)
			}
			taken[k] = fmt.Sprintf("p%d", i)
		}
	}
	// cmcc has 40 ports for 30 groups and 15 singles: 40 succeed; every
	// failed group gave back what it took in ctcc.
	if okGroups+okSingles != 40 {
		t.Errorf("%d groups and %d single ports bound, want 40 in all (cmcc's ports)", okGroups, okSingles)
	}
	for _, pool := range []string{ctcc, cmcc} {
		al, _ := p.loaded(pool)
		want := okGroups
		if pool == cmcc {
			want += okSingles
		}
		if got := al.Stats().Allocated; got != want {
			t.Errorf("pool %s holds %d slots, want %d (nothing left by failed groups)", pool, got, want)
		}
	}
}

// TestSamePortMoves: what is kept of a same-port group moves as a whole
// when it holds different ports, or when its port cannot be had in a pool
// that lacks it while another port is free in all; otherwise it stays.
func TestSamePortMoves(t *testing.T) {
	ctx := context.Background()
	group := []Port{same(ctcc), same(cmcc)}
	// pools holds each of others' bindings in a PodAddress of its own.
	pools := func(others ...v1alpha1.PortBinding) []client.Object {
		objs := []client.Object{
			ispPool(ctcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 5)...)}),
			ispPool(cmcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", ports(100, 5)...), udpLB("lb-m2", ports(100, 5)...)}),
			podAddress(poolNS, "p0", in(ctcc, "lb-c1", 103)),
		}
		for i, b := range others {
			objs = append(objs, podAddress(poolNS, fmt.Sprintf("other-%d", i), b))
		}
		return objs
	}
	cases := map[string]struct {
		reason string
		objs   []client.Object
		funcs  interceptor.Funcs
		pa     *v1alpha1.PodAddress
		g      []Port
		kept   []v1alpha1.PortBinding
		moves  bool
		why    string
	}{
		"AllKept": {
			reason: "Nothing is missing: nothing moves, and no pool is read.",
			funcs:  failGetOf(ctcc, errBoom),
			g:      group,
			kept:   []v1alpha1.PortBinding{in(ctcc, "lb-c1", 103), in(cmcc, "lb-m1", 103)},
		},
		"DifferentPorts": {
			reason: "Kept bindings of different ports (the option added to a bound Pod) all move.",
			g:      group,
			kept:   []v1alpha1.PortBinding{in(ctcc, "lb-c1", 103), in(cmcc, "lb-m1", 104)},
			moves:  true,
			why:    "holds different public ports in its pools (team-a/ctcc 103, team-a/cmcc 104)",
		},
		"MissingTakesThePort": {
			reason: "The pool whose binding moved has the port free on another load balancer: the rest stay.",
			objs:   pools(in(cmcc, "lb-m1", 103)),
			g:      group,
			kept:   []v1alpha1.PortBinding{in(ctcc, "lb-c1", 103)},
		},
		"PortTakenThereAnotherFree": {
			reason: "The port is taken on every load balancer of the pool that lacks it, and 100 is free in both: every binding moves.",
			objs:   pools(in(cmcc, "lb-m1", 103), in(cmcc, "lb-m2", 103)),
			g:      group,
			kept:   []v1alpha1.PortBinding{in(ctcc, "lb-c1", 103)},
			moves:  true,
			why:    "holds public port 103, which pool team-a/cmcc cannot give it",
		},
		"PortTakenThereNoneFree": {
			reason: "The port is taken there and no port is free in both pools: the kept binding stays rather than lose its address for nothing.",
			objs: pools(in(cmcc, "lb-m1", 103), in(cmcc, "lb-m2", 103), in(ctcc, "lb-c1", 100), in(ctcc, "lb-c1", 101), in(ctcc, "lb-c1", 102),
				in(ctcc, "lb-c1", 104)),
			g:    group,
			kept: []v1alpha1.PortBinding{in(ctcc, "lb-c1", 103)},
		},
		"PoolUnreadable": {
			reason: "A pool that cannot be read moves nothing.",
			objs:   pools(in(cmcc, "lb-m1", 103), in(cmcc, "lb-m2", 103)),
			funcs:  failGetOf(cmcc, errBoom),
			g:      group,
			kept:   []v1alpha1.PortBinding{in(ctcc, "lb-c1", 103)},
		},
		"Ordinal": {
			reason: "The Ordinal port is the port: nothing better to move to.",
			objs:   pools(in(cmcc, "lb-m1", 103), in(cmcc, "lb-m2", 103)),
			pa: func() *v1alpha1.PodAddress {
				pa := podAddress(poolNS, "gs-3")
				pa.Spec.Strategy = v1alpha1.StrategyOrdinal
				return pa
			}(),
			g:    group,
			kept: []v1alpha1.PortBinding{in(ctcc, "lb-c1", 103)},
		},
		"NotSamePort": {
			reason: "Ports without the option never move together.",
			g:      []Port{{Pool: ctcc, ContainerPort: 8000, Protocol: "UDP"}},
			kept:   []v1alpha1.PortBinding{in(ctcc, "lb-c1", 103)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pa := tc.pa
			if pa == nil {
				pa = podAddress(poolNS, "p0", tc.kept...)
			}
			objs := tc.objs
			if objs == nil {
				objs = pools()
			}
			p := NewPools(newKube(t, tc.funcs, objs...), func(string, []portalloc.LBStats) {})
			moves, why := p.SamePortMoves(ctx, pa, tc.g, tc.kept)
			if moves != tc.moves || !strings.Contains(why, tc.why) || (why == "") != !tc.moves {
				t.Errorf("%s\nSamePortMoves = %t, %q; want %t, %q", tc.reason, moves, why, tc.moves, tc.why)
			}
		})
	}
}

// TestServableSamePort: a same-port group over pools that can never share
// a port is refused before anything is allocated; once bound, it is not
// checked again.
func TestServableSamePort(t *testing.T) {
	ctx := context.Background()
	objs := []client.Object{
		ispPool(ctcc, 100, 104, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", ports(100, 5)...)}),
		ispPool(cmcc, 200, 204, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-m1", ports(200, 5)...)}),
	}
	p := NewPools(newKube(t, interceptor.Funcs{}, objs...), func(string, []portalloc.LBStats) {})
	err := p.Servable(ctx, podAddress(poolNS, "p0"), []Port{same(ctcc), same(cmcc)})
	if err == nil || !strings.Contains(err.Error(), "port 8000/UDP asks for the same public port in pools team-a/ctcc, team-a/cmcc (useSamePortAcrossPools), but their ports do not overlap") {
		t.Errorf("Servable: %v", err)
	}
	if err := p.Servable(ctx, podAddress(poolNS, "p0"), []Port{{Pool: ctcc, ContainerPort: 8000, Protocol: "UDP"}, {Pool: cmcc, ContainerPort: 8000, Protocol: "UDP"}}); err != nil {
		t.Errorf("Servable without the option: %v", err)
	}
	bound := podAddress(poolNS, "p0", in(ctcc, "lb-c1", 100), in(cmcc, "lb-m1", 200))
	if err := p.Servable(ctx, bound, []Port{same(ctcc), same(cmcc)}); err != nil {
		t.Errorf("Servable of a bound group: %v", err)
	}
}

// TestSegmentFits: a segment forwards to as many consecutive target ports,
// which must end by 65535.
func TestSegmentFits(t *testing.T) {
	ctx := context.Background()
	pp := ispPool(ctcc, 30000, 60002, []clbv1alpha1.PoolLoadBalancerStatus{udpLB("lb-c1", 30000)}, segments(10001))
	cases := map[string]struct {
		funcs  interceptor.Funcs
		target int32
		err    string
	}{
		"Fits":           {target: 7000},
		"LastFit":        {target: 55535},
		"PastTheEnd":     {target: 55536, err: "PortPool team-a/ctcc gives segments of 10001 ports, forwarded to 10001 consecutive target ports from 55536, which would end at 65536, past 65535: use a target port of at most 55535"},
		"PoolUnreadable": {funcs: failGetOf(ctcc, errBoom), target: 60000},
	}
	for name, tc := range cases {
		p := NewPools(newKube(t, tc.funcs, pp), func(string, []portalloc.LBStats) {})
		err := p.SegmentFits(ctx, same(ctcc), tc.target)
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: SegmentFits = %v, want %q", name, err, tc.err)
		}
	}
}
