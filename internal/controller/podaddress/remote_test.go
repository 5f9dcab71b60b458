package podaddress

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// TestRemoteHealth: Healthy follows what the Pod is told (the states on the
// way to Bound share one condition, and one lasting a second adds none, so
// they cost at most one write), Synced is
// False only while the request waits on a person, and a condition keeps
// its time while its status stays.
func TestRemoteHealth(t *testing.T) {
	bound := corev1.PodCondition{Status: corev1.ConditionTrue, Reason: "Bound", Message: "TCP/7777→1.2.3.4:30000"}
	waiting := corev1.PodCondition{Status: corev1.ConditionFalse, Reason: v1alpha1.StateWaitBackend, Message: "no Pod IP"}
	allocated := corev1.PodCondition{Status: corev1.ConditionFalse, Reason: v1alpha1.StateAllocated, Message: "registering"}
	noPort := corev1.PodCondition{Status: corev1.ConditionFalse, Reason: v1alpha1.StateNoPortAvailable, Message: "pool full"}
	for name, tc := range map[string]struct {
		told                   corev1.PodCondition
		failing                bool
		healthy, synced        corev1.ConditionStatus
		healthyReason, message string
	}{
		"bound":        {bound, false, corev1.ConditionTrue, corev1.ConditionTrue, "Bound", bound.Message},
		"waiting":      {waiting, false, corev1.ConditionFalse, corev1.ConditionTrue, string(v1alpha1.ReasonBinding), ""},
		"no free port": {noPort, true, corev1.ConditionFalse, corev1.ConditionFalse, v1alpha1.StateNoPortAvailable, noPort.Message},
	} {
		got := remoteHealth(nil, tc.told, tc.failing)
		if len(got) != 2 || got[0].Type != v1alpha1.RemotePodHealthy || got[1].Type != v1alpha1.RemotePodSynced {
			t.Fatalf("%s: %+v", name, got)
		}
		h, s := got[0], got[1]
		if h.Status != tc.healthy || h.Reason != tc.healthyReason || s.Status != tc.synced || (tc.message != "" && h.Message != tc.message) {
			t.Errorf("%s: Healthy %+v Synced %+v", name, h, s)
		}
		if tc.failing && s.Message != tc.told.Message {
			t.Errorf("%s: Synced message %q, want %q", name, s.Message, tc.told.Message)
		}
	}
	// Allocated lasts a second: no condition (no write) of its own, but
	// once there are some it shares WaitBackend's.
	if got := remoteHealth(nil, allocated, false); got != nil {
		t.Errorf("Allocated on a RemotePod without Healthy: %+v, want none", got)
	}
	w := remoteHealth(nil, waiting, false)
	if a := remoteHealth(w, allocated, false); len(a) != 2 || a[0] != w[0] || a[1] != w[1] {
		t.Errorf("Allocated after WaitBackend %+v, want %+v", a, w)
	}
	then := metav1.NewTime(metav1.Now().Add(-time.Hour).Truncate(time.Second))
	had := []corev1.PodCondition{{Type: v1alpha1.RemotePodHealthy, Status: corev1.ConditionFalse, LastTransitionTime: then},
		{Type: v1alpha1.RemotePodSynced, Status: corev1.ConditionTrue, LastTransitionTime: then}}
	got := remoteHealth(had, noPort, true)
	if !got[0].LastTransitionTime.Equal(&then) || got[1].LastTransitionTime.Equal(&then) {
		t.Errorf("times: Healthy %s (status kept, want %s), Synced %s (status changed, want now)", got[0].LastTransitionTime, then, got[1].LastTransitionTime)
	}
}
