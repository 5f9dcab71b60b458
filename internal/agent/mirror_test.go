package agent

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// TestPodConditions: the Pod is told only the address conditions of its
// RemotePod's status; the RemotePod's own Healthy and Synced, and any
// Ready, never reach the Pod, whose Ready is the kubelet's.
func TestPodConditions(t *testing.T) {
	st := v1alpha1.RemotePodStatus{Conditions: []corev1.PodCondition{
		{Type: podannotation.ConditionAddressReady, Status: corev1.ConditionTrue},
		{Type: v1alpha1.RemotePodHealthy, Status: corev1.ConditionTrue},
		{Type: v1alpha1.RemotePodSynced, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse},
		{Type: podannotation.BCSConditionPortBindingReady, Status: corev1.ConditionTrue},
	}}
	got := podConditions(st)
	if len(got) != 2 || got[0].Type != podannotation.ConditionAddressReady || got[1].Type != podannotation.BCSConditionPortBindingReady {
		t.Errorf("told %+v, want only the two address conditions", got)
	}
	if c := podConditions(v1alpha1.RemotePodStatus{Conditions: st.Conditions[1:4]}); len(c) != 0 {
		t.Errorf("a status with only the RemotePod's own conditions tells %+v", c)
	}
}
