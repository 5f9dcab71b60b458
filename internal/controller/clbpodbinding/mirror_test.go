package clbpodbinding

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// tkePodAddress is the PodAddress of a Pod annotated
//
//	8000 UDP pool-a
//	7000 TCPUDP pool-a,team/pool-b
//
// in namespace game, bound: pool-a is a CLBPortPool's (tke-port-pools),
// team/pool-b a PortPool of another namespace.
func tkePodAddress() *networkv1alpha1.PodAddress {
	a := networkv1alpha1.PoolRef{Namespace: podannotation.TKEPoolNamespace, Name: "pool-a"}
	b := networkv1alpha1.PoolRef{Namespace: "team", Name: "pool-b"}
	pa := &networkv1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: "game", Name: "gs-0"}}
	pa.Spec = networkv1alpha1.PodAddressSpec{Source: tkeSource, Ports: []networkv1alpha1.PortRequest{
		{Port: intstr.FromInt32(8000), Protocol: networkv1alpha1.ProtocolUDP, Pools: []networkv1alpha1.PoolRef{a}},
		{Port: intstr.FromInt32(7000), Protocol: networkv1alpha1.ProtocolTCPUDP, Pools: []networkv1alpha1.PoolRef{a, b}},
	}}
	pa.Status.State = networkv1alpha1.StateBound
	pa.Status.Bindings = []networkv1alpha1.PortBinding{
		{Pool: "team/pool-b", Protocol: networkv1alpha1.ProtocolTCPUDP, ContainerPort: 7000, LoadBalancerID: "lb-b", Region: "ap-shanghai", Port: 30000,
			ListenerIDs: map[string]string{"TCP": "lbl-b-tcp", "UDP": "lbl-b-udp"}},
		{Pool: "tke-port-pools/pool-a", Protocol: networkv1alpha1.ProtocolUDP, ContainerPort: 8000, LoadBalancerID: "lb-a", Region: "ap-guangzhou", Port: 30010, EndPort: 30019,
			ListenerIDs: map[string]string{"UDP": "lbl-a-udp-8000"}, AddressIPVersion: "ipv4"},
		{Pool: "tke-port-pools/pool-a", Protocol: networkv1alpha1.ProtocolTCPUDP, ContainerPort: 7000, LoadBalancerID: "lb-a", Region: "ap-guangzhou", Port: 30000,
			ListenerIDs: map[string]string{"TCP": "lbl-a-tcp", "UDP": "lbl-a-udp"}, AddressIPVersion: "ipv4"},
	}
	return pa
}

// tkeBound is what tke-extend's CLBPodBinding of that Pod says: its
// lines as ports, one entry per listener (TCPUDP is two), in its order.
func tkeBound() mirror {
	return mirror{
		spec: v1alpha1.CLBBindingSpec{Ports: []v1alpha1.PortEntry{
			{Port: 8000, Protocol: "UDP", Pools: []string{"pool-a"}},
			{Port: 7000, Protocol: "TCPUDP", Pools: []string{"pool-a", "team/pool-b"}},
		}},
		status: v1alpha1.CLBBindingStatus{State: v1alpha1.BindingStateBound, PortBindings: []v1alpha1.PortBindingStatus{
			{Port: 7000, Protocol: "TCP", Pool: "pool-a", Region: "ap-guangzhou", LoadbalancerID: "lb-a", LoadbalancerPort: 30000, ListenerID: "lbl-a-tcp", AddressIPVersion: ptr.To("ipv4")},
			{Port: 7000, Protocol: "UDP", Pool: "pool-a", Region: "ap-guangzhou", LoadbalancerID: "lb-a", LoadbalancerPort: 30000, ListenerID: "lbl-a-udp", AddressIPVersion: ptr.To("ipv4")},
			{Port: 8000, Protocol: "UDP", Pool: "pool-a", Region: "ap-guangzhou", LoadbalancerID: "lb-a", LoadbalancerPort: 30010, LoadbalancerEndPort: ptr.To[int32](30019),
				ListenerID: "lbl-a-udp-8000", AddressIPVersion: ptr.To("ipv4")},
			{Port: 7000, Protocol: "TCP", Pool: "team/pool-b", Region: "ap-shanghai", LoadbalancerID: "lb-b", LoadbalancerPort: 30000, ListenerID: "lbl-b-tcp"},
			{Port: 7000, Protocol: "UDP", Pool: "team/pool-b", Region: "ap-shanghai", LoadbalancerID: "lb-b", LoadbalancerPort: 30000, ListenerID: "lbl-b-udp"},
		}},
	}
}

func TestMirrorOf(t *testing.T) {
	cases := map[string]struct {
		reason string
		pa     func(*networkv1alpha1.PodAddress)
		want   func(*mirror)
		none   bool
	}{
		"Bound": {
			reason: "ports as the lines say them, bindings one per listener in tke-extend's order, pools named as the Pod named them",
		},
		"Isolated": {
			reason: "an isolated Pod (enable-clb-port-mapping \"false\") is a Disabled binding that keeps its ports",
			pa: func(pa *networkv1alpha1.PodAddress) {
				pa.Spec.Isolated, pa.Status.State = true, networkv1alpha1.StateIsolated
			},
			want: func(m *mirror) { m.spec.Disabled, m.status.State = ptr.To(true), v1alpha1.BindingStateDisabled },
		},
		"CreatedWithPorts": {
			reason: "a PodAddress created with its ports recorded (status not yet written) is Allocated, with those ports",
			pa: func(pa *networkv1alpha1.PodAddress) {
				bs := pa.Status.Bindings
				pa.Status = networkv1alpha1.PodAddressStatus{}
				if err := networkv1alpha1.SetCreatedBindings(pa, bs); err != nil {
					t.Fatal(err)
				}
			},
			want: func(m *mirror) { m.status.State = v1alpha1.BindingStateAllocated },
		},
		"New": {
			reason: "nothing recorded yet: Pending, no bindings",
			pa:     func(pa *networkv1alpha1.PodAddress) { pa.Status = networkv1alpha1.PodAddressStatus{} },
			want:   func(m *mirror) { m.status = v1alpha1.CLBBindingStatus{State: v1alpha1.BindingStatePending} },
		},
		"Held": {
			reason: "a retained Pod's ports without the Pod: tke-extend's NoBackend",
			pa: func(pa *networkv1alpha1.PodAddress) {
				pa.Status.State, pa.Status.Message = networkv1alpha1.StateHeld, "the Pod is gone"
			},
			want: func(m *mirror) { m.status.State, m.status.Message = v1alpha1.BindingStateNoBackend, "the Pod is gone" },
		},
		"NoPort": {
			reason: "a full pool, with the PodAddress's message",
			pa: func(pa *networkv1alpha1.PodAddress) {
				pa.Status.State, pa.Status.Message, pa.Status.Bindings = networkv1alpha1.StateNoPortAvailable, "pool-a is full", nil
			},
			want: func(m *mirror) {
				m.status = v1alpha1.CLBBindingStatus{State: v1alpha1.BindingStateNoPortAvailable, Message: "pool-a is full"}
			},
		},
		"PoolNotFound": {
			reason: "tke-extend's name for a missing pool",
			pa: func(pa *networkv1alpha1.PodAddress) {
				pa.Status.State, pa.Status.Bindings = networkv1alpha1.StatePoolNotFound, nil
			},
			want: func(m *mirror) { m.status = v1alpha1.CLBBindingStatus{State: v1alpha1.BindingStatePortPoolNotFound} },
		},
		"Invalid": {
			reason: "a refusal tke-extend has no name for is Failed, with the reason",
			pa: func(pa *networkv1alpha1.PodAddress) {
				pa.Status.State, pa.Status.Message, pa.Status.Bindings = networkv1alpha1.StateInvalid, "useSamePortAcrossPools needs Ordinal", nil
			},
			want: func(m *mirror) {
				m.status = v1alpha1.CLBBindingStatus{State: v1alpha1.BindingStateFailed, Message: "useSamePortAcrossPools needs Ordinal"}
			},
		},
		"OtherState": {
			reason: "a state with no tke-extend counterpart is Failed, naming it",
			pa: func(pa *networkv1alpha1.PodAddress) {
				pa.Status.State, pa.Status.Message, pa.Status.Bindings = networkv1alpha1.StateQuotaExceeded, "EIP quota reached", nil
			},
			want: func(m *mirror) {
				m.status = v1alpha1.CLBBindingStatus{State: v1alpha1.BindingStateFailed, Message: "PodAddress state QuotaExceeded: EIP quota reached"}
			},
		},
		"Deleting": {
			reason: "a PodAddress being deleted (targets deregistered first) is Deleting",
			pa:     func(pa *networkv1alpha1.PodAddress) { pa.DeletionTimestamp = &metav1.Time{} },
			want:   func(m *mirror) { m.status.State = v1alpha1.BindingStateDeleting },
		},
		"HostPortLinesLeftOut": {
			reason: "a clb-hostport-mapping line is bound through the Node in tke-extend, not in the Pod's binding",
			pa: func(pa *networkv1alpha1.PodAddress) {
				pa.Spec.Ports = append(pa.Spec.Ports, networkv1alpha1.PortRequest{Port: intstr.FromInt32(9000), Protocol: networkv1alpha1.ProtocolTCP,
					Pools: pa.Spec.Ports[0].Pools, Backend: networkv1alpha1.BackendHostPort})
				pa.Status.Bindings = append(pa.Status.Bindings, networkv1alpha1.PortBinding{Pool: "tke-port-pools/pool-a", Protocol: networkv1alpha1.ProtocolTCP,
					ContainerPort: 9000, LoadBalancerID: "lb-a", Port: 30020, ListenerIDs: map[string]string{"TCP": "lbl-host"}})
			},
		},
		"OnlyHostPortLines": {
			reason: "a Pod with only clb-hostport-mapping lines has no CLBPodBinding",
			pa:     func(pa *networkv1alpha1.PodAddress) { pa.Spec.Backend = networkv1alpha1.BackendHostPort },
			none:   true,
		},
		"OurSyntax": {
			reason: "a Pod that asked in another syntax has no CLBPodBinding",
			pa:     func(pa *networkv1alpha1.PodAddress) { pa.Spec.Source = "annotation/" + podannotation.SyntaxNative },
			none:   true,
		},
		"Policy": {
			reason: "a policy's PodAddress has no CLBPodBinding",
			pa:     func(pa *networkv1alpha1.PodAddress) { pa.Spec.Source = networkv1alpha1.PolicySource("web") },
			none:   true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pa := tkePodAddress()
			if tc.pa != nil {
				tc.pa(pa)
			}
			want := tkeBound()
			if tc.want != nil {
				tc.want(&want)
			}
			got, ok := mirrorOf(pa)
			if ok == tc.none {
				t.Fatalf("%s: mirrored %v, want %v", tc.reason, ok, !tc.none)
			}
			if tc.none {
				return
			}
			if d := cmp.Diff(want, got, cmp.AllowUnexported(mirror{})); d != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, d)
			}
		})
	}
}
