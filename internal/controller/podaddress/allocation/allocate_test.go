package allocation

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/portalloc"
)

var tcpPort = Port{Pool: poolKey, ContainerPort: 80, Protocol: "TCP"}

func TestAllocate(t *testing.T) {
	ctx := context.Background()
	tcp := []string{"TCP"}
	two, four, one := int64(2), int64(4), int64(1)
	readyPool := func(mod func(*clbv1alpha1.PortPool)) *clbv1alpha1.PortPool {
		pp := portPool(lbStatus("lb-1", clbv1alpha1.PoolLBReady, tcp, ports(100, 10)...))
		if mod != nil {
			mod(pp)
		}
		return pp
	}
	ordinal := func(name string) *v1alpha1.PodAddress {
		pa := podAddress(poolNS, name)
		pa.Spec.Strategy = v1alpha1.StrategyOrdinal
		return pa
	}
	bound := func(lb string, port int32) v1alpha1.PortBinding {
		lbs := lbStatus(lb, clbv1alpha1.PoolLBReady, tcp, port)
		return v1alpha1.PortBinding{Pool: poolKey, Protocol: "TCP", ContainerPort: 80, LoadBalancerID: lb, Port: port,
			Region: lbs.Region, ISP: lbs.ISP, VIPs: lbs.VIPs, Hostname: lbs.Hostname, LoadBalancerName: lbs.Name, LoadBalancerType: lbs.Type,
			AddressIPVersion: lbs.AddressIPVersion, ListenerIDs: map[string]string{"TCP": listenerID(lb, "TCP", port)}}
	}
	type want struct {
		b     v1alpha1.PortBinding
		isNew bool
		state string
		err   string // a substring of the error
		holds bool   // the owner holds a slot afterwards
		usage []string
	}
	cases := map[string]struct {
		reason string
		objs   []client.Object
		funcs  interceptor.Funcs
		pa     *v1alpha1.PodAddress
		w      Port
		want   want
	}{
		"PoolNotFound": {
			reason: "A pool that does not exist is PoolNotFound.",
			pa:     podAddress(poolNS, "p0"),
			w:      tcpPort,
			want:   want{state: v1alpha1.StatePoolNotFound, err: "PortPool " + poolKey + " does not exist"},
		},
		"PoolUnreadable": {
			reason: "A pool that cannot be read leaves the PodAddress Pending with the error.",
			objs:   []client.Object{readyPool(nil)},
			funcs:  failGet(&clbv1alpha1.PortPool{}, errBoom),
			pa:     podAddress(poolNS, "p0"),
			w:      tcpPort,
			want:   want{state: v1alpha1.StatePending, err: "boom"},
		},
		"Dynamic": {
			reason: "A new owner gets the first free slot, described from the pool's status, and the usage of its load balancer is reported.",
			objs:   []client.Object{readyPool(nil)},
			pa:     podAddress(poolNS, "p0"),
			w:      tcpPort,
			want:   want{b: bound("lb-1", 100), isNew: true, holds: true, usage: []string{poolKey + " lb-1 1/9"}},
		},
		"AlreadyHeld": {
			reason: "An owner whose status holds a slot gets it back, not new.",
			objs:   []client.Object{readyPool(nil), podAddress(poolNS, "p0", held("lb-1", 105))},
			pa:     podAddress(poolNS, "p0"),
			w:      tcpPort,
			want:   want{b: bound("lb-1", 105), holds: true, usage: []string{poolKey + " lb-1 1/9"}},
		},
		"TCPUDPSegmentExternal": {
			reason: "A TCP_UDP port gets both listeners; a segment its end port; an external address is copied.",
			objs: []client.Object{readyPool(func(pp *clbv1alpha1.PortPool) {
				pp.Spec.ForProvider.Protocols = []string{"TCP", "UDP"}
				pp.Spec.ForProvider.SegmentLength = &two
				ext := "gw.example:443"
				pp.Spec.ForProvider.External = &ext
				pp.Status.AtProvider.LoadBalancers = []clbv1alpha1.PoolLoadBalancerStatus{lbStatus("lb-1", clbv1alpha1.PoolLBReady, []string{"TCP", "UDP"}, 100, 102)}
			})},
			pa: podAddress(poolNS, "p0"),
			w:  Port{Pool: poolKey, ContainerPort: 80, Protocol: v1alpha1.ProtocolTCPUDP},
			want: want{b: func() v1alpha1.PortBinding {
				b := bound("lb-1", 100)
				b.Protocol, b.EndPort, b.External = v1alpha1.ProtocolTCPUDP, 101, "gw.example:443"
				b.ListenerIDs["UDP"] = listenerID("lb-1", "UDP", 100)
				return b
			}(), isNew: true, holds: true, usage: []string{poolKey + " lb-1 1/1"}},
		},
		"LongSegment": {
			reason: "A segment of 10001 ports (tke-extend's multi-ISP guide): the binding ends 10000 ports above its first.",
			objs: []client.Object{readyPool(func(pp *clbv1alpha1.PortPool) {
				seg := int64(10001)
				pp.Spec.ForProvider.StartPort, pp.Spec.ForProvider.EndPort, pp.Spec.ForProvider.SegmentLength = 30000, 60002, &seg
				pp.Status.AtProvider.LoadBalancers = []clbv1alpha1.PoolLoadBalancerStatus{lbStatus("lb-1", clbv1alpha1.PoolLBReady, tcp, 30000, 40001, 50002)}
			}), podAddress(poolNS, "other", held("lb-1", 30000))},
			pa: podAddress(poolNS, "p0"),
			w:  tcpPort,
			want: want{b: func() v1alpha1.PortBinding {
				b := bound("lb-1", 40001)
				b.EndPort = 50001
				return b
			}(), isNew: true, holds: true, usage: []string{poolKey + " lb-1 2/1"}},
		},
		"Ordinal": {
			reason: "StatefulSet Pod 3 gets startPort + 3.",
			objs:   []client.Object{readyPool(nil)},
			pa:     ordinal("web-3"),
			w:      tcpPort,
			want:   want{b: bound("lb-1", 103), isNew: true, holds: true, usage: []string{poolKey + " lb-1 1/9"}},
		},
		"OrdinalSegment": {
			reason: "With segments of 2 ports, Pod 2 gets startPort + 4 to startPort + 5.",
			objs: []client.Object{readyPool(func(pp *clbv1alpha1.PortPool) {
				pp.Spec.ForProvider.SegmentLength = &two
			})},
			pa: ordinal("web-2"),
			w:  tcpPort,
			want: want{b: func() v1alpha1.PortBinding {
				b := bound("lb-1", 104)
				b.EndPort = 105
				return b
			}(), isNew: true, holds: true, usage: []string{poolKey + " lb-1 1/9"}},
		},
		"OrdinalRemotePod": {
			reason: "A RemotePod's PodAddress, named <podns>.<podname>, takes its ordinal off the Pod's name as a Pod's does.",
			objs:   []client.Object{readyPool(nil)},
			pa:     ordinal("game.room-3"),
			w:      tcpPort,
			want:   want{b: bound("lb-1", 103), isNew: true, holds: true, usage: []string{poolKey + " lb-1 1/9"}},
		},
		"OrdinalWithoutOrdinal": {
			reason: "The Ordinal strategy refuses a name without an ordinal.",
			objs:   []client.Object{readyPool(nil)},
			pa:     ordinal("web"),
			w:      tcpPort,
			want:   want{state: v1alpha1.StateInvalid, err: `not "web"`},
		},
		"OrdinalTaken": {
			reason: "The port of an ordinal that another owner holds is not available.",
			objs:   []client.Object{readyPool(nil), podAddress(poolNS, "other", held("lb-1", 101))},
			pa:     ordinal("web-1"),
			w:      tcpPort,
			want:   want{state: v1alpha1.StateNoPortAvailable, err: "pool " + poolKey + ": " + portalloc.ErrTaken.Error()},
		},
		"OrdinalOutOfRange": {
			reason: "An ordinal beyond the last port is an error of the allocator, left Pending.",
			objs:   []client.Object{readyPool(nil)},
			pa:     ordinal("web-70000"),
			w:      tcpPort,
			want:   want{state: v1alpha1.StatePending, err: portalloc.ErrInvalid.Error()},
		},
		"OrdinalWraps": {
			reason: "An ordinal whose port is beyond int32 must not wrap onto a valid port: 100 + 2^30 × 4 is not port 100.",
			objs: []client.Object{readyPool(func(pp *clbv1alpha1.PortPool) {
				pp.Spec.ForProvider.SegmentLength = &four
			})},
			pa:   ordinal("web-1073741824"),
			w:    tcpPort,
			want: want{state: v1alpha1.StatePending, err: portalloc.ErrInvalid.Error()},
		},
		"OrdinalUnparsable": {
			reason: "An ordinal beyond int32 is refused as out of range, not taken as the largest int32.",
			objs:   []client.Object{readyPool(nil)},
			pa:     ordinal("web-99999999999"),
			w:      tcpPort,
			want:   want{state: v1alpha1.StatePending, err: portalloc.ErrInvalid.Error()},
		},
		"Full": {
			reason: "A pool without a free slot is NoPortAvailable.",
			objs: []client.Object{portPool(lbStatus("lb-1", clbv1alpha1.PoolLBReady, tcp, 100)),
				podAddress(poolNS, "other", held("lb-1", 100))},
			pa:   podAddress(poolNS, "p0"),
			w:    tcpPort,
			want: want{state: v1alpha1.StateNoPortAvailable, err: portalloc.ErrNoPortAvailable.Error()},
		},
		"NamespaceBoundStated": {
			reason: "A namespace that holds the pool's maxBindingsPerNamespace gets no more, and is told which rule.",
			objs: []client.Object{readyPool(func(pp *clbv1alpha1.PortPool) {
				pp.Spec.Consumers = &clbv1alpha1.PoolConsumers{MaxBindingsPerNamespace: &one}
			}), podAddress(poolNS, "other", held("lb-1", 100))},
			pa:   podAddress(poolNS, "p0"),
			w:    tcpPort,
			want: want{state: v1alpha1.StateNoPortAvailable, err: "hold 1 of its ports, as many as its spec.consumers.maxBindingsPerNamespace allows"},
		},
		"DepartedHeldSlot": {
			reason: "A held slot on a load balancer that is draining is not an address: it is given back and the PodAddress waits.",
			objs: []client.Object{portPool(lbStatus("lb-1", clbv1alpha1.PoolLBDraining, tcp, 100)),
				podAddress(poolNS, "p0", held("lb-1", 100))},
			pa:   podAddress(poolNS, "p0"),
			w:    tcpPort,
			want: want{state: v1alpha1.StatePending, err: "the listeners of lb-1 port 100 are not in its status yet"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := &usageLog{}
			p := NewPools(newKube(t, tc.funcs, tc.objs...), func(string, []portalloc.LBStats) {})
			if tc.funcs.Get == nil && len(tc.objs) > 0 {
				// Load the pool first, so that usage shows only what the
				// allocation changed.
				if _, _, err := p.Get(ctx, poolKey); err != nil {
					t.Fatal(err)
				}
			}
			p.usage = u.record
			b, isNew, state, err := p.Allocate(ctx, tc.pa, tc.w)
			if tc.want.err == "" && err != nil || tc.want.err != "" && (err == nil || !strings.Contains(err.Error(), tc.want.err)) {
				t.Fatalf("%s\nAllocate(...): error %v, want %q", tc.reason, err, tc.want.err)
			}
			if diff := cmp.Diff(tc.want.b, b); diff != "" {
				t.Errorf("%s\nAllocate(...): binding -want, +got:\n%s", tc.reason, diff)
			}
			if isNew != tc.want.isNew || state != tc.want.state {
				t.Errorf("%s\nAllocate(...): isNew %t, state %q; want %t, %q", tc.reason, isNew, state, tc.want.isNew, tc.want.state)
			}
			if al, ok := p.loaded(poolKey); ok {
				o := owner(client.ObjectKeyFromObject(tc.pa), tc.w.ContainerPort, tc.w.Protocol)
				if _, holds := al.Lookup(o); holds != tc.want.holds {
					t.Errorf("%s\nafter Allocate the owner holds a slot: %t, want %t", tc.reason, holds, tc.want.holds)
				}
			} else if tc.want.holds {
				t.Errorf("%s\nthe pool was not loaded", tc.reason)
			}
			if diff := cmp.Diff(tc.want.usage, u.take()); diff != "" {
				t.Errorf("%s\nusage: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestAllocateSharedDefault: a namespace let into a shared pool without a
// stated bound is held at the default, and told that the owner may state
// one; the pool's own namespace is not bounded.
func TestAllocateSharedDefault(t *testing.T) {
	ctx := context.Background()
	pp := portPool(lbStatus("lb-1", clbv1alpha1.PoolLBReady, []string{"TCP"}, ports(100, clbv1alpha1.DefaultMaxBindingsPerOtherNamespace+2)...))
	pp.Spec.Consumers = &clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}}
	p := NewPools(newKube(t, interceptor.Funcs{}, pp), func(string, []portalloc.LBStats) {})
	for i := range clbv1alpha1.DefaultMaxBindingsPerOtherNamespace {
		if _, _, _, err := p.Allocate(ctx, podAddress("guest", fmt.Sprintf("p%d", i)), tcpPort); err != nil {
			t.Fatalf("allocation %d of the guest namespace: %v", i, err)
		}
	}
	_, _, state, err := p.Allocate(ctx, podAddress("guest", "one-more"), tcpPort)
	if state != v1alpha1.StateNoPortAvailable || err == nil || !strings.Contains(err.Error(), "the default for other namespaces of a shared pool (100;") {
		t.Errorf("the guest namespace's allocation past the default: %q, %v", state, err)
	}
	if _, _, _, err := p.Allocate(ctx, podAddress(poolNS, "own"), tcpPort); err != nil {
		t.Errorf("the pool's own namespace was bounded: %v", err)
	}
}

// TestAllocateAll: every port gets a slot in order; when one fails, those
// taken new are given back and slots already held kept.
func TestAllocateAll(t *testing.T) {
	ctx := context.Background()
	tcp := []string{"TCP"}
	udp := Port{Pool: poolKey, ContainerPort: 53, Protocol: "TCP"}
	gone := Port{Pool: "team-a/gone", ContainerPort: 81, Protocol: "TCP"}
	cases := map[string]struct {
		reason    string
		ps        []Port
		wantPorts []int32
		wantFresh []Port
		err       string
		holds     map[Port]bool
	}{
		"AllTaken": {
			reason:    "Each port gets a binding; only the one not held before is fresh.",
			ps:        []Port{tcpPort, udp},
			wantPorts: []int32{100, 101},
			wantFresh: []Port{udp},
			holds:     map[Port]bool{tcpPort: true, udp: true},
		},
		"OneFails": {
			reason: "A failing port undoes the fresh slots before it and keeps the held one.",
			ps:     []Port{tcpPort, udp, gone},
			err:    "PortPool team-a/gone does not exist",
			holds:  map[Port]bool{tcpPort: true, udp: false},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pa := podAddress(poolNS, "p0", held("lb-1", 100))
			p := NewPools(newKube(t, interceptor.Funcs{}, portPool(lbStatus("lb-1", clbv1alpha1.PoolLBReady, tcp, 100, 101)), pa),
				func(string, []portalloc.LBStats) {})
			r := p.Reserve(pa)
			bs, err := r.AllocateAll(ctx, tc.ps)
			fresh := r.fresh
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%s\nAllocateAll(...): %v, want %q", tc.reason, err, tc.err)
			}
			var got []int32
			for _, b := range bs {
				got = append(got, b.Port)
			}
			if diff := cmp.Diff(tc.wantPorts, got); diff != "" {
				t.Errorf("%s\nports: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantFresh, fresh); diff != "" {
				t.Errorf("%s\nfresh: -want, +got:\n%s", tc.reason, diff)
			}
			al, _ := p.loaded(poolKey)
			for w, want := range tc.holds {
				if _, ok := al.Lookup(owner(client.ObjectKeyFromObject(pa), w.ContainerPort, w.Protocol)); ok != want {
					t.Errorf("%s\nport %d holds a slot: %t, want %t", tc.reason, w.ContainerPort, ok, want)
				}
			}
		})
	}
}

// TestReleaseBindings: the slots of the bindings are given back in pools
// this process has loaded; a pool it has not is not read for it.
func TestReleaseBindings(t *testing.T) {
	ctx := context.Background()
	pa := podAddress(poolNS, "p0", held("lb-1", 100))
	reads := 0
	kube := newKube(t, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		reads++
		return c.Get(ctx, key, obj, opts...)
	}}, portPool(lbStatus("lb-1", clbv1alpha1.PoolLBReady, []string{"TCP"}, 100)), pa)
	p := NewPools(kube, func(string, []portalloc.LBStats) {})
	al, _, err := p.Get(ctx, poolKey)
	if err != nil {
		t.Fatal(err)
	}
	reads = 0
	other := held("lb-9", 100)
	other.Pool = "team-a/unloaded"
	p.ReleaseBindings(pa, []v1alpha1.PortBinding{held("lb-1", 100), other})
	if _, ok := al.Lookup("team-a/p0#80/TCP"); ok {
		t.Error("ReleaseBindings kept the slot")
	}
	if reads != 0 {
		t.Errorf("ReleaseBindings read %d pools; it only releases in loaded ones", reads)
	}
}

// TestServable: a port whose pool has no listeners of its protocol is
// refused before anything is allocated; bound ports and unreadable pools
// are not checked.
func TestServable(t *testing.T) {
	ctx := context.Background()
	tcpUDP := Port{Pool: poolKey, ContainerPort: 80, Protocol: v1alpha1.ProtocolTCPUDP}
	boundTCPUDP := held("lb-1", 100)
	boundTCPUDP.Protocol = v1alpha1.ProtocolTCPUDP
	cases := map[string]struct {
		reason string
		objs   []client.Object
		funcs  interceptor.Funcs
		bound  []v1alpha1.PortBinding
		ws     []Port
		err    string
	}{
		"Served": {
			reason: "A TCP port in a TCP pool is served.",
			objs:   []client.Object{portPool()},
			ws:     []Port{tcpPort},
		},
		"Unserved": {
			reason: "A TCP_UDP port in a TCP pool is refused, naming what is missing.",
			objs:   []client.Object{portPool()},
			ws:     []Port{tcpPort, tcpUDP},
			err:    "PortPool team-a/web has TCP listeners only; a TCP_UDP port needs UDP listeners too",
		},
		"AlreadyBound": {
			reason: "A port already bound is not checked again.",
			objs:   []client.Object{portPool()},
			bound:  []v1alpha1.PortBinding{boundTCPUDP},
			ws:     []Port{tcpUDP},
		},
		"PoolUnreadable": {
			reason: "A pool that cannot be read is left to the allocation.",
			funcs:  failGet(&clbv1alpha1.PortPool{}, errBoom),
			ws:     []Port{tcpUDP},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := NewPools(newKube(t, tc.funcs, tc.objs...), func(string, []portalloc.LBStats) {})
			err := p.Servable(ctx, podAddress(poolNS, "p0", tc.bound...), tc.ws)
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s\nServable(...): %v, want %q", tc.reason, err, tc.err)
			}
		})
	}
}

// TestOwns: the allocator confirms a binding it records for the owner,
// records one nobody holds, and refuses one another owner holds.
func TestOwns(t *testing.T) {
	ctx := context.Background()
	tcp := []string{"TCP"}
	cases := map[string]struct {
		reason string
		funcs  interceptor.Funcs
		b      v1alpha1.PortBinding
		want   bool
		holds  bool // the owner holds b's slot afterwards
	}{
		"Recorded":       {reason: "The slot the allocator has for the owner is its.", b: held("lb-1", 100), want: true, holds: true},
		"OtherSlot":      {reason: "A binding that is not the owner's recorded slot is not its.", b: held("lb-1", 101)},
		"PoolUnreadable": {reason: "A pool that cannot be read says nothing against the binding.", funcs: failGet(&clbv1alpha1.PortPool{}, errBoom), b: held("lb-1", 101), want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := NewPools(newKube(t, tc.funcs, portPool(lbStatus("lb-1", clbv1alpha1.PoolLBReady, tcp, 100, 101)),
				podAddress(poolNS, "p0", held("lb-1", 100))), func(string, []portalloc.LBStats) {})
			key := client.ObjectKey{Namespace: poolNS, Name: "p0"}
			if got := p.Owns(ctx, key, tc.b); got != tc.want {
				t.Errorf("%s\nOwns(...) = %t, want %t", tc.reason, got, tc.want)
			}
			if al, ok := p.loaded(poolKey); ok {
				s, _ := al.Lookup(owner(key, 80, "TCP"))
				if got := s == (portalloc.Slot{LB: tc.b.LoadBalancerID, Port: tc.b.Port}); got != tc.holds {
					t.Errorf("%s\nthe owner holds the binding's slot: %t, want %t", tc.reason, got, tc.holds)
				}
			}
		})
	}

	// An owner the allocator does not know yet is given the slot when it
	// is free, and refused when another holds it.
	p := NewPools(newKube(t, interceptor.Funcs{}, portPool(lbStatus("lb-1", clbv1alpha1.PoolLBReady, tcp, 100, 101)),
		podAddress(poolNS, "p0", held("lb-1", 100))), func(string, []portalloc.LBStats) {})
	late := client.ObjectKey{Namespace: poolNS, Name: "late"}
	if !p.Owns(ctx, late, held("lb-1", 101)) {
		t.Error("a binding on a free slot written after the pool was loaded is not its owner's")
	}
	if al, _ := p.loaded(poolKey); al != nil {
		if s, _ := al.Lookup(owner(late, 80, "TCP")); s.Port != 101 {
			t.Errorf("the free slot was not recorded for its owner: %v", s)
		}
	}
	if p.Owns(ctx, client.ObjectKey{Namespace: poolNS, Name: "thief"}, held("lb-1", 100)) {
		t.Error("a binding on a slot another owner holds was confirmed")
	}
}

// TestHasLeft: a binding has left when its load balancer left the pool;
// a pool that cannot be read says nothing.
func TestHasLeft(t *testing.T) {
	ctx := context.Background()
	tcp := []string{"TCP"}
	pp := portPool(lbStatus("lb-1", clbv1alpha1.PoolLBReady, tcp, 100), lbStatus("lb-2", clbv1alpha1.PoolLBRemoved, tcp, 100))
	cases := map[string]struct {
		funcs interceptor.Funcs
		b     v1alpha1.PortBinding
		want  bool
	}{
		"Stays":          {b: held("lb-1", 100)},
		"Removed":        {b: held("lb-2", 100), want: true},
		"PoolUnreadable": {funcs: failGet(&clbv1alpha1.PortPool{}, errBoom), b: held("lb-2", 100)},
	}
	for name, tc := range cases {
		p := NewPools(newKube(t, tc.funcs, pp), func(string, []portalloc.LBStats) {})
		if got := p.HasLeft(ctx, tc.b); got != tc.want {
			t.Errorf("%s: HasLeft = %t, want %t", name, got, tc.want)
		}
	}
}
