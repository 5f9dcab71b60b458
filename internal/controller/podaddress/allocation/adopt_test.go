package allocation

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/portalloc"
)

// tkePool is the PortPool tke-port-pools/pool-a as its controller sees a
// cluster tke-extend bound, once the switch is made: on lb-1, it took over
// tke-extend's UDP listener lbl-u0 of port 30000, which forwards to
// 10.0.0.5:7777, its TCP and UDP listeners of port 30001, to
// 10.0.0.6:7777, and lbl-u2 of port 30002, to two Pods (all Inherited: no
// binding records them yet); lbl-u3 of port 30003 was taken over for
// another Pod already.
func tkePool() *clbv1alpha1.PortPool {
	pp := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: podannotation.TKEPoolNamespace, Name: "pool-a", UID: "pool-uid"}}
	pp.Spec.ForProvider.StartPort, pp.Spec.ForProvider.EndPort = 30000, 30049
	pp.Spec.ForProvider.Protocols = []string{"TCP", "UDP"}
	pp.Status.AtProvider.LoadBalancers = []clbv1alpha1.PoolLoadBalancerStatus{
		{ID: "lb-1", State: clbv1alpha1.PoolLBCreating, VIPs: []string{"1.1.1.1"},
			Listeners: map[string]string{"TCP/30000": "lbl-t0", "TCP/30003": "lbl-t3", "UDP/30003": "lbl-u3"},
			Adopted:   map[string]string{"UDP/30003": "lbl-u3"},
			Inherited: []clbv1alpha1.TKEListener{
				{Key: "UDP/30000", ID: "lbl-u0", Targets: []string{"10.0.0.5:7777"}},
				{Key: "TCP/30001", ID: "lbl-t1", Targets: []string{"10.0.0.6:7777"}},
				{Key: "UDP/30001", ID: "lbl-u1", Targets: []string{"10.0.0.6:7777"}},
				{Key: "UDP/30002", ID: "lbl-u2", Targets: []string{"10.0.0.7:7777", "10.0.0.8:7777"}},
			}},
		{ID: "lb-gone", State: clbv1alpha1.PoolLBNotFound},
	}
	return pp
}

// listedOnly turns tkePool back into a pool that lists tke-extend's
// listeners (TKEListeners) without taking them over, annotated k=v.
func listedOnly(k, v string) func(*clbv1alpha1.PortPool) {
	return func(pp *clbv1alpha1.PortPool) {
		lb := &pp.Status.AtProvider.LoadBalancers[0]
		lb.TKEListeners, lb.Inherited = lb.Inherited, nil
		if k != "" {
			pp.SetAnnotations(map[string]string{k: v})
		}
	}
}

// nodeSegments makes tkePool a pool of 10-port segments on which
// tke-extend gave a Node (InternalIP 10.1.0.7, line "7000 TCPUDP pool-a")
// the segment 30010-30019: listeners lbl-ts and lbl-us, taken over.
func nodeSegments(pp *clbv1alpha1.PortPool) {
	pp.Spec.ForProvider.SegmentLength = ptr.To[int64](10)
	lb := &pp.Status.AtProvider.LoadBalancers[0]
	lb.Adopted, lb.Inherited = nil, []clbv1alpha1.TKEListener{
		{Key: "TCP/30010", ID: "lbl-ts", Targets: []string{"10.1.0.7:7000"}},
		{Key: "UDP/30010", ID: "lbl-us", Targets: []string{"10.1.0.7:7000"}},
	}
}

// segment is the entry tke-extend writes on a Node for its line's port
// 7000 on a segment of lb-1.
func segment(proto string, port, end int32, listener string) podannotation.TKEPortMapping {
	e := entry(proto, "lb-1", port, listener)
	e.Port, e.LoadbalancerEndPort, e.EndPort = 7000, end, 7000+end-port
	return e
}

func entry(proto, lb string, port int32, listener string) podannotation.TKEPortMapping {
	return podannotation.TKEPortMapping{Port: 7777, Protocol: proto, Pool: "pool-a", LoadbalancerID: lb, LoadbalancerPort: port, ListenerID: listener}
}

// TestAdoptable: each decision on keeping a tke-extend address, from the
// Pod's result and what the pool found in the cloud. Every refusal comes
// before anything is reserved or written.
func TestAdoptable(t *testing.T) {
	udp := Port{Pool: "tke-port-pools/pool-a", ContainerPort: 7777, Protocol: "UDP"}
	both := Port{Pool: "tke-port-pools/pool-a", ContainerPort: 7777, Protocol: v1alpha1.ProtocolTCPUDP}
	cases := map[string]struct {
		reason string
		pool   func(*clbv1alpha1.PortPool)
		w      Port
		result []podannotation.TKEPortMapping
		target string
		want   Adoption
		// err: the error contains it ("" for none); wait: ErrAdoptWait.
		err  string
		wait bool
	}{
		"Kept": {
			reason: "The result names tke-extend's listener on a slot of the pool, whose only target is the Pod.",
			w:      udp, result: []podannotation.TKEPortMapping{entry("UDP", "lb-1", 30000, "lbl-u0")}, target: "10.0.0.5:7777",
			want: Adoption{Slot: portalloc.Slot{LB: "lb-1", Port: 30000}, ListenerIDs: map[string]string{"UDP": "lbl-u0"}},
		},
		"KeptTCPUDP": {
			reason: "A TCPUDP port keeps both listeners of its slot.",
			w:      both, result: []podannotation.TKEPortMapping{entry("TCP", "lb-1", 30001, "lbl-t1"), entry("UDP", "lb-1", 30001, "lbl-u1")}, target: "10.0.0.6:7777",
			want: Adoption{Slot: portalloc.Slot{LB: "lb-1", Port: 30001}, ListenerIDs: map[string]string{"TCP": "lbl-t1", "UDP": "lbl-u1"}},
		},
		"OtherPodsTarget": {
			reason: "A forged result naming another Pod's listener: its target is not this Pod.",
			w:      udp, result: []podannotation.TKEPortMapping{entry("UDP", "lb-1", 30000, "lbl-u0")}, target: "10.0.0.9:7777",
			err: "has targets [10.0.0.5:7777], not the Pod's 10.0.0.9:7777 alone",
		},
		"OtherTargetsToo": {
			reason: "A listener with other targets besides the Pod is not kept.",
			w:      udp, result: []podannotation.TKEPortMapping{entry("UDP", "lb-2", 30002, "lbl-u2")}, target: "10.0.0.7:7777",
			pool: func(pp *clbv1alpha1.PortPool) { pp.Status.AtProvider.LoadBalancers[0].ID = "lb-2" },
			err:  "has targets [10.0.0.7:7777 10.0.0.8:7777]",
		},
		"OutsideThePool": {
			reason: "A result pointing at a load balancer outside the pool.",
			w:      udp, result: []podannotation.TKEPortMapping{entry("UDP", "lb-other", 30000, "lbl-u0")}, target: "10.0.0.5:7777",
			err: "load balancer lb-other is not one of pool pool-a's",
		},
		"LoadBalancerGone": {
			reason: "A load balancer of the pool that takes no bindings.",
			w:      udp, result: []podannotation.TKEPortMapping{entry("UDP", "lb-gone", 30000, "lbl-u0")}, target: "10.0.0.5:7777",
			err: "load balancer lb-gone is NotFound",
		},
		"ForgedListenerID": {
			reason: "The result names a listener id other than tke-extend's listener on that slot.",
			w:      udp, result: []podannotation.TKEPortMapping{entry("UDP", "lb-1", 30000, "lbl-t0")}, target: "10.0.0.5:7777",
			err: "names listener lbl-t0 for UDP/30000 on lb-1, but tke-extend's listener there is lbl-u0",
		},
		"ProtocolDiffers": {
			reason: "The Pod asks for UDP; its result gives it a TCP listener.",
			w:      udp, result: []podannotation.TKEPortMapping{entry("TCP", "lb-1", 30001, "lbl-t1")}, target: "10.0.0.6:7777",
			err: "gives port 7777 a TCP listener; the Pod asks for UDP",
		},
		"NoListenerOnSlot": {
			reason: "No tke-extend listener of that protocol and port sits on the slot (another port, end port or protocol is not listed).",
			w:      udp, result: []podannotation.TKEPortMapping{entry("UDP", "lb-1", 30004, "lbl-u4")}, target: "10.0.0.5:7777",
			err: "no listener of tke-extend serves UDP/30004 on lb-1",
		},
		"SegmentDiffers": {
			reason: "A result with an end port on a pool of single ports.",
			w:      udp, result: []podannotation.TKEPortMapping{func() podannotation.TKEPortMapping {
				e := entry("UDP", "lb-1", 30000, "lbl-u0")
				e.LoadbalancerEndPort = 30009
				return e
			}()}, target: "10.0.0.5:7777",
			err: "are not a slot of pool pool-a",
		},
		"AlreadyTakenOver": {
			reason: "Two Pods claim one slot: the listener was taken over for the first.",
			w:      udp, result: []podannotation.TKEPortMapping{entry("UDP", "lb-1", 30003, "lbl-u3")}, target: "10.0.0.5:7777",
			err: "already taken over by the pool for another Pod",
		},
		"HalfOfTCPUDP": {
			reason: "A TCPUDP port whose result has one protocol only.",
			w:      both, result: []podannotation.TKEPortMapping{entry("UDP", "lb-1", 30001, "lbl-u1")}, target: "10.0.0.6:7777",
			err: "has no TCP entry for port 7777",
		},
		"SplitTCPUDP": {
			reason: "A TCPUDP port whose protocols the result puts on different ports.",
			w:      both, result: []podannotation.TKEPortMapping{entry("TCP", "lb-1", 30001, "lbl-t1"), entry("UDP", "lb-1", 30000, "lbl-u0")}, target: "10.0.0.6:7777",
			err: "on different load balancers or ports",
		},
		"OtherPort": {
			reason: "A result with no entry for the Pod's port.",
			w:      Port{Pool: udp.Pool, ContainerPort: 8888, Protocol: "UDP"}, result: []podannotation.TKEPortMapping{entry("UDP", "lb-1", 30000, "lbl-u0")}, target: "10.0.0.5:8888",
			err: "no entry for port 8888",
		},
		"NotATKEPool": {
			reason: "Only pools made from CLBPortPools, in tke-port-pools, keep tke-extend addresses: another namespace's pool is a tenant's.",
			pool:   func(pp *clbv1alpha1.PortPool) { pp.Namespace = "team-a" },
			w:      udp, result: []podannotation.TKEPortMapping{entry("UDP", "lb-1", 30000, "lbl-u0")}, target: "10.0.0.5:7777",
			err: "is not one of tke-port-pools",
		},
		"DryRun": {
			reason: "In a dry run the pool only lists tke-extend's listeners (TKEListeners): the decision is made from them.",
			pool:   listedOnly(clbv1alpha1.AnnotationTKESwitch, clbv1alpha1.TKESwitchDryRun),
			w:      udp, result: []podannotation.TKEPortMapping{entry("UDP", "lb-1", 30000, "lbl-u0")}, target: "10.0.0.5:7777",
			want: Adoption{Slot: portalloc.Slot{LB: "lb-1", Port: 30000}, ListenerIDs: map[string]string{"UDP": "lbl-u0"}},
		},
		"DryRunOtherTargets": {
			reason: "A dry run refuses a listener with other targets as the switch would.",
			pool:   listedOnly(clbv1alpha1.AnnotationTKESwitch, clbv1alpha1.TKESwitchDryRun),
			w:      udp, result: []podannotation.TKEPortMapping{entry("UDP", "lb-1", 30002, "lbl-u2")}, target: "10.0.0.7:7777",
			err: "has targets [10.0.0.7:7777 10.0.0.8:7777]",
		},
		"GameServerSetPool": {
			reason: "A GameServerSet's pool lists tke-extend's listeners and takes over those a binding records: the decision is made from the list.",
			pool:   listedOnly(clbv1alpha1.AnnotationActsFor, "game"),
			w:      udp, result: []podannotation.TKEPortMapping{entry("UDP", "lb-1", 30000, "lbl-u0")}, target: "10.0.0.5:7777",
			want: Adoption{Slot: portalloc.Slot{LB: "lb-1", Port: 30000}, ListenerIDs: map[string]string{"UDP": "lbl-u0"}},
		},
		"SwitchedNotTakenOverYet": {
			reason: "Switched, but the pool's status is still the dry run's list: the decision waits for the pool to take the listeners over and read their targets again.",
			pool:   listedOnly("", ""),
			w:      udp, result: []podannotation.TKEPortMapping{entry("UDP", "lb-1", 30000, "lbl-u0")}, target: "10.0.0.5:7777",
			wait: true,
		},
		"KeptNodeSegment": {
			reason: "A Node of the HostPort scheme (served as a Pod, its InternalIP the target) keeps the TCPUDP segment tke-extend gave it: both listeners, the segment's end port.",
			pool:   nodeSegments,
			w:      Port{Pool: udp.Pool, ContainerPort: 7000, Protocol: v1alpha1.ProtocolTCPUDP},
			result: []podannotation.TKEPortMapping{segment("TCP", 30010, 30019, "lbl-ts"), segment("UDP", 30010, 30019, "lbl-us")}, target: "10.1.0.7:7000",
			want: Adoption{Slot: portalloc.Slot{LB: "lb-1", Port: 30010}, EndPort: 30019, ListenerIDs: map[string]string{"TCP": "lbl-ts", "UDP": "lbl-us"}},
		},
		"NodeSegmentEndDiffers": {
			reason: "A result whose segment ends short of the pool's segment is no slot of the pool.",
			pool:   nodeSegments,
			w:      Port{Pool: udp.Pool, ContainerPort: 7000, Protocol: v1alpha1.ProtocolTCPUDP},
			result: []podannotation.TKEPortMapping{segment("TCP", 30010, 30018, "lbl-ts"), segment("UDP", 30010, 30018, "lbl-us")}, target: "10.1.0.7:7000",
			err: "ports 30010-30018 are not a slot of pool pool-a (segments of 10)",
		},
		"NodeSegmentOtherNode": {
			reason: "Another Node's result naming this segment: the listeners forward to 10.1.0.7, not to it.",
			pool:   nodeSegments,
			w:      Port{Pool: udp.Pool, ContainerPort: 7000, Protocol: v1alpha1.ProtocolTCPUDP},
			result: []podannotation.TKEPortMapping{segment("TCP", 30010, 30019, "lbl-ts"), segment("UDP", 30010, 30019, "lbl-us")}, target: "10.1.0.8:7000",
			err: "not the Pod's 10.1.0.8:7000 alone",
		},
		"PoolNotObservedYet": {
			reason: "A pool that has not listed its load balancers: the decision waits.",
			pool:   func(pp *clbv1alpha1.PortPool) { pp.Status.AtProvider.LoadBalancers = nil },
			w:      udp, result: []podannotation.TKEPortMapping{entry("UDP", "lb-1", 30000, "lbl-u0")}, target: "10.0.0.5:7777",
			wait: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pp := tkePool()
			if tc.pool != nil {
				tc.pool(pp)
			}
			got, err := Adoptable(pp, tc.w, tc.result, tc.target)
			switch {
			case tc.wait:
				if !errors.Is(err, ErrAdoptWait) {
					t.Fatalf("%s\nAdoptable: %v, want ErrAdoptWait", tc.reason, err)
				}
			case tc.err != "":
				if !errors.Is(err, ErrNotAdopted) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%s\nAdoptable: %+v, %v; want a refusal containing %q", tc.reason, got, err, tc.err)
				}
			case err != nil:
				t.Fatalf("%s\nAdoptable: %v", tc.reason, err)
			default:
				if got.Slot != tc.want.Slot || got.EndPort != tc.want.EndPort || len(got.ListenerIDs) != len(tc.want.ListenerIDs) {
					t.Fatalf("%s\nAdoptable = %+v, want %+v", tc.reason, got, tc.want)
				}
				for k, v := range tc.want.ListenerIDs {
					if got.ListenerIDs[k] != v {
						t.Errorf("%s\nlistener %s = %q, want %q", tc.reason, k, got.ListenerIDs[k], v)
					}
				}
			}
		})
	}
}

// TestAdoptReservesTheSlot: Adopt gives the PodAddress exactly the slot
// its result names, with tke-extend's listeners in the binding, not a slot
// the policy would pick; a second Pod claiming the same slot is refused.
func TestAdoptReservesTheSlot(t *testing.T) {
	s := runtime.NewScheme()
	if err := clbv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	pp := tkePool()
	pp.Spec.ForProvider.AllocationPolicy = ptr.To(clbv1alpha1.PolicyInOrder)
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(pp).
		WithIndex(&v1alpha1.PodAddress{}, v1alpha1.PoolIndex, v1alpha1.PoolsOf).Build()
	p := NewPools(kube, func(string, []portalloc.LBStats) {})
	ctx := context.Background()
	w := Port{Pool: "tke-port-pools/pool-a", ContainerPort: 7777, Protocol: "UDP"}
	a := Adoption{Slot: portalloc.Slot{LB: "lb-1", Port: 30000}, ListenerIDs: map[string]string{"UDP": "lbl-u0"}}

	first := p.Reserve(podAddress("game", "gs-0"))
	b, err := first.Adopt(ctx, w, a)
	if err != nil {
		t.Fatal(err)
	}
	first.Commit()
	if b.LoadBalancerID != "lb-1" || b.Port != 30000 || b.ListenerIDs["UDP"] != "lbl-u0" || len(b.VIPs) != 1 || b.VIPs[0] != "1.1.1.1" {
		t.Errorf("binding %+v, want lb-1:30000 on listener lbl-u0 with the VIP 1.1.1.1", b)
	}
	second := p.Reserve(podAddress("game", "gs-1"))
	defer second.Drop()
	if _, err := second.Adopt(ctx, w, a); !errors.Is(err, ErrNotAdopted) || !strings.Contains(err.Error(), "held by another Pod") {
		t.Errorf("a second Pod claiming lb-1:30000: %v, want a refusal", err)
	}
	if second.Fresh() {
		t.Error("a refused adoption holds a slot")
	}
}

// TestInheritedSlotsTakeNoBinding: a slot whose listener the pool took
// over from tke-extend while it still forwards to a Pod that did not keep
// its address (Inherited) is not offered to the allocator; once the pool
// no longer lists it there, it is.
func TestInheritedSlotsTakeNoBinding(t *testing.T) {
	lb := clbv1alpha1.PoolLoadBalancerStatus{ID: "lb-1", State: clbv1alpha1.PoolLBReady,
		Listeners: map[string]string{"UDP/30000": "lbl-u0", "UDP/30001": "lbl-u1", "TCP/30001": "lbl-t1"}}
	for _, tc := range []struct {
		name      string
		protocols []string
		inherited []clbv1alpha1.TKEListener
		want      []int32
	}{
		{name: "none inherited", protocols: []string{"UDP"}, want: []int32{30000, 30001}},
		{name: "30000 inherited", protocols: []string{"UDP"}, inherited: []clbv1alpha1.TKEListener{{Key: "UDP/30000", ID: "lbl-u0", Targets: []string{"10.0.0.5:7777"}}},
			want: []int32{30001}},
		{name: "one protocol of a TCP and UDP slot inherited", protocols: []string{"TCP", "UDP"}, inherited: []clbv1alpha1.TKEListener{{Key: "TCP/30001", ID: "lbl-t1", Targets: []string{"10.0.0.6:7777"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := lb
			l.Inherited = tc.inherited
			got := readyPorts(l, tc.protocols)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("ready ports %v, want %v", got, tc.want)
			}
		})
	}
}
