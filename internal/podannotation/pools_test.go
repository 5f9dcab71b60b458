package podannotation

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNamedPools: the pools of every syntax's lines, also of lines Parse
// refuses, each in the namespace its syntax defaults to.
func TestNamedPools(t *testing.T) {
	cases := map[string]struct {
		annotations map[string]string
		want        []string
	}{
		"TKEExtendInvalidOption": {
			annotations: map[string]string{TKEAnnotationPortMapping: "80 TCP pool-a bogus\n81 TCPUDP pool-b,other/pool-c"},
			want:        []string{"tke-port-pools/pool-a", "tke-port-pools/pool-b", "other/pool-c"},
		},
		"NativeBadPort": {
			annotations: map[string]string{AnnotationPorts: "x/UDP web, tke-port-pools/pool-a"},
			want:        []string{"team-a/web", "tke-port-pools/pool-a"},
		},
		"BCS": {
			annotations: map[string]string{BCSAnnotationPorts: "web TCP 80;pool-a.tke-port-pools 81"},
			want:        []string{"team-a/web", "tke-port-pools/pool-a"},
		},
		"None": {annotations: map[string]string{TKEAnnotationPortMapping: "80 TCP"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Annotations: tc.annotations}}
			if got := NamedPools(p); !slices.Equal(got, tc.want) {
				t.Errorf("NamedPools = %v, want %v", got, tc.want)
			}
		})
	}
}
