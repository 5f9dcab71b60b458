package podaddress

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

func TestPortRequestsFallback(t *testing.T) {
	fb := &v1alpha1.PoolRef{Name: "rooms"}
	pa := &v1alpha1.PodAddress{Spec: v1alpha1.PodAddressSpec{EIP: &v1alpha1.EIPRequest{FallbackPool: fb}}}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Ports: []corev1.ContainerPort{{ContainerPort: 7777}, {ContainerPort: 7777, Protocol: corev1.ProtocolUDP}, {ContainerPort: 9, Protocol: corev1.ProtocolSCTP}}},
		{Ports: []corev1.ContainerPort{{ContainerPort: 7777, Protocol: corev1.ProtocolTCP}}},
	}}}
	if prs, err := portRequests(pa, pod); err != nil || prs != nil {
		t.Fatalf("before any fallback: %v, %v", prs, err)
	}
	pa.Status.EIP = &v1alpha1.EIPBinding{State: v1alpha1.EIPFallback, Reason: "quota"}
	prs, err := portRequests(pa, pod)
	if err != nil {
		t.Fatal(err)
	}
	want := []v1alpha1.PortRequest{
		{Port: intstr.FromInt32(7777), Protocol: "TCP", Pools: []v1alpha1.PoolRef{*fb}},
		{Port: intstr.FromInt32(7777), Protocol: "UDP", Pools: []v1alpha1.PoolRef{*fb}},
	}
	if d := cmp.Diff(want, prs); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
	if _, err := portRequests(pa, &corev1.Pod{}); err == nil {
		t.Error("a Pod without ports fell back to nothing")
	}
}
