package podannotation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

func TestEnvVars(t *testing.T) {
	bs := []v1alpha1.PortBinding{
		{Protocol: "TCP_UDP", ContainerPort: 8000, VIPs: []string{"1.1.1.1"}, Port: 31000},
		{Protocol: "TCP_UDP", ContainerPort: 8000, VIPs: []string{"2.2.2.2", "2402:4e00::1"}, Port: 32000},
		{Protocol: "UDP", ContainerPort: 9000, VIPs: []string{"3.3.3.3"}, Port: 33000, EndPort: 33004},
	}
	want := []corev1.EnvVar{
		{Name: "BCS_PORTPOOL_PORT_VIPLIST_TCP_8000", Value: "1.1.1.1:31000,2.2.2.2:32000,[2402:4e00::1]:32000"},
		{Name: "BCS_PORTPOOL_PORT_VIPLIST_UDP_8000", Value: "1.1.1.1:31000,2.2.2.2:32000,[2402:4e00::1]:32000"},
		{Name: "BCS_PORTPOOL_PORT_VIPLIST_UDP_9000", Value: "3.3.3.3:33000-33004"},
	}
	if diff := cmp.Diff(want, EnvVars(bs)); diff != "" {
		t.Errorf("EnvVars (-want +got):\n%s", diff)
	}
}

func TestAllocateAtAdmission(t *testing.T) {
	pod := func(a map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: a}}
	}
	for _, c := range []struct {
		a      map[string]string
		syntax string
		want   bool
	}{
		{nil, SyntaxBCS, true}, // bcs always did
		{nil, SyntaxNative, false},
		{map[string]string{AnnotationAllocateAtAdmission: "false"}, SyntaxBCS, false},
		{map[string]string{AnnotationAllocateAtAdmission: "true"}, SyntaxNative, true},
		{map[string]string{AnnotationAllocateAtAdmission: "yes"}, SyntaxNative, false},
	} {
		if got := AllocateAtAdmission(pod(c.a), c.syntax); got != c.want {
			t.Errorf("AllocateAtAdmission(%v, %s) = %v, want %v", c.a, c.syntax, got, c.want)
		}
	}
}

func TestSetEnvAndGate(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "i"}},
		Containers:     []corev1.Container{{Name: "c", Env: []corev1.EnvVar{{Name: "A", Value: "x"}, {Name: "B", Value: "old"}}}},
	}}
	SetEnv(p, []corev1.EnvVar{{Name: "B", Value: "new"}})
	if diff := cmp.Diff([]corev1.EnvVar{{Name: "A", Value: "x"}, {Name: "B", Value: "new"}}, p.Spec.Containers[0].Env); diff != "" {
		t.Errorf("container env (-want +got):\n%s", diff)
	}
	if len(p.Spec.InitContainers[0].Env) != 1 {
		t.Errorf("init container env %v, want B", p.Spec.InitContainers[0].Env)
	}
	if !AddReadinessGate(p) || AddReadinessGate(p) || len(p.Spec.ReadinessGates) != 1 {
		t.Errorf("AddReadinessGate: gates %v, want one, added once", p.Spec.ReadinessGates)
	}
}
