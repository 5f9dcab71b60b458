package podaddress

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

func TestNamedAddresses(t *testing.T) {
	pod := &corev1.Pod{}
	pod.SetNamespace("game")
	pod.Spec.Containers = []corev1.Container{{Ports: []corev1.ContainerPort{
		{Name: "game", ContainerPort: 9000, Protocol: corev1.ProtocolTCP},
		{Name: "voice", ContainerPort: 8000, Protocol: corev1.ProtocolUDP},
	}}}
	bs := []v1alpha1.PortBinding{
		{Pool: "game/ctcc", Protocol: "TCP", ContainerPort: 9000, Address: "2.2.2.2:30001"},
		{Pool: "game/bgp", Protocol: "TCP", ContainerPort: 9000, Address: "1.1.1.1:30001"},
		{Pool: "game/seg", Protocol: "UDP", ContainerPort: 8000, Address: "1.1.1.1:31000-31009"},
		{Pool: "game/bgp", Protocol: "UDP", ContainerPort: 7000},
	}
	ports := []v1alpha1.PortRequest{
		{Port: intstr.FromString("game"), Pools: []v1alpha1.PoolRef{{Name: "bgp"}, {Name: "ctcc"}}, AddressAnnotation: "a/game"},
		{Port: intstr.FromInt32(8000), Pools: []v1alpha1.PoolRef{{Name: "seg"}}, AddressAnnotation: "a/voice"},
		{Port: intstr.FromInt32(7000), Protocol: "UDP", Pools: []v1alpha1.PoolRef{{Name: "bgp"}}, AddressAnnotation: "a/unbound"},
		{Port: intstr.FromString("nosuch"), Pools: []v1alpha1.PoolRef{{Name: "bgp"}}, AddressAnnotation: "a/invalid"},
		{Port: intstr.FromInt32(9000), Pools: []v1alpha1.PoolRef{{Name: "bgp"}}},
	}
	want := map[string]string{
		// Several pools: in the order of the request, not of the bindings.
		"a/game": "1.1.1.1:30001,2.2.2.2:30001",
		// A segment is VIP:port-endPort.
		"a/voice": "1.1.1.1:31000-31009",
		// Not registered yet, or not resolvable: no annotation.
	}
	if diff := cmp.Diff(want, namedAddresses(pod, ports, bs)); diff != "" {
		t.Errorf("namedAddresses: -want +got:\n%s", diff)
	}
}

func TestWithNamedAddresses(t *testing.T) {
	cases := map[string]struct {
		reason     string
		have       map[string]string
		named      map[string]string
		want       map[string]string
		wantRemove []string
	}{
		"First": {
			reason: "The names written are listed.",
			named:  map[string]string{"b/x": "1.1.1.1:1", "a/y": "1.1.1.1:2"},
			want:   map[string]string{"b/x": "1.1.1.1:1", "a/y": "1.1.1.1:2", podannotation.AnnotationNamedAddresses: "a/y,b/x"},
		},
		"Renamed": {
			reason:     "A name no longer asked for is removed; the Pod's own annotations are not.",
			have:       map[string]string{"old/x": "1.1.1.1:1", "mine": "v", podannotation.AnnotationNamedAddresses: "old/x"},
			named:      map[string]string{"new/x": "1.1.1.1:1"},
			want:       map[string]string{"new/x": "1.1.1.1:1", podannotation.AnnotationNamedAddresses: "new/x"},
			wantRemove: []string{"old/x"},
		},
		"Dropped": {
			reason:     "With no name asked for, the list goes too.",
			have:       map[string]string{"old/x": "1.1.1.1:1", podannotation.AnnotationNamedAddresses: "old/x"},
			named:      map[string]string{},
			want:       map[string]string{},
			wantRemove: []string{podannotation.AnnotationNamedAddresses, "old/x"},
		},
		"Untouched": {
			reason: "A Pod that never had named annotations loses nothing.",
			have:   map[string]string{"old/x": "mine"},
			named:  map[string]string{},
			want:   map[string]string{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{}
			pod.SetAnnotations(tc.have)
			got := map[string]string{}
			remove := withNamedAddresses(pod, got, tc.named)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nannotations: -want +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantRemove, remove, cmpopts.SortSlices(func(a, b string) bool { return a < b }), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nremove: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
