package podaddress

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// TestPodOf: the Pod a RemotePod stands for carries the spec's annotations
// with what the status tells applied, so telling compares with what was
// told; the node, owner, deletion and the agent's Ready come from the spec.
func TestPodOf(t *testing.T) {
	rp := &v1alpha1.RemotePod{ObjectMeta: metav1.ObjectMeta{Namespace: "idc-1", Name: "game.room-3", ResourceVersion: "7"}}
	rp.Spec = v1alpha1.RemotePodSpec{
		PodUID:      "uid-1",
		Annotations: map[string]string{"ask": "7777 pool", "old": "x", "told": "stale"},
		Owner:       &v1alpha1.RemoteOwner{Kind: "StatefulSet", Name: "room"},
		Node:        &v1alpha1.RemoteNode{Name: "n1", InternalIP: "10.0.0.9", InstanceID: "ins-1"},
		PodIP:       "10.1.0.3",
		Ready:       true,
		Deleting:    true,
	}
	rp.Status = v1alpha1.RemotePodStatus{
		Annotations:       map[string]string{"told": "Ready"},
		RemoveAnnotations: []string{"old"},
		Conditions:        []corev1.PodCondition{{Type: conditionAddressReady, Status: corev1.ConditionTrue}},
	}
	pod := podOf(rp)
	if want := map[string]string{"ask": "7777 pool", "told": "Ready"}; !maps.Equal(pod.Annotations, want) {
		t.Errorf("annotations %v, want %v", pod.Annotations, want)
	}
	if pod.Name != rp.Name || pod.UID != "uid-1" || pod.ResourceVersion != "7" {
		t.Errorf("name %s uid %s version %s, want the RemotePod's name and version and the Pod's UID", pod.Name, pod.UID, pod.ResourceVersion)
	}
	if pod.Status.HostIP != "10.0.0.9" || pod.Spec.NodeName != "n1" || pod.Status.PodIP != "10.1.0.3" || len(pod.Status.PodIPs) != 1 {
		t.Errorf("node %s/%s, IPs %s %v", pod.Spec.NodeName, pod.Status.HostIP, pod.Status.PodIP, pod.Status.PodIPs)
	}
	if pod.DeletionTimestamp == nil {
		t.Error("a deleting Pod without a deletion timestamp")
	}
	if o := metav1.GetControllerOf(pod); o == nil || o.Kind != "StatefulSet" || o.Name != "room" {
		t.Errorf("controller %+v, want StatefulSet room", o)
	}
	if c := podCondition(pod, corev1.PodReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("Ready %+v, want True", c)
	}
	if c := podCondition(pod, conditionAddressReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("address condition %+v, want the one told", c)
	}
	if rp.Spec.Annotations["old"] != "x" {
		t.Error("podOf changed the RemotePod's spec")
	}
}

// TestRemotePodsServed: watches wait until the kind is served, and reads
// are off until then.
func TestRemotePodsServed(t *testing.T) {
	x := &RemotePods{}
	added := 0
	if err := x.watch(func() error { added++; return nil }); err != nil || added != 0 || x.on.Load() {
		t.Fatalf("before Served: added %d, on %t (%v)", added, x.on.Load(), err)
	}
	if err := x.Served(); err != nil || added != 1 || !x.on.Load() {
		t.Fatalf("Served: added %d, on %t (%v)", added, x.on.Load(), err)
	}
	if err := x.watch(func() error { added++; return nil }); err != nil || added != 2 {
		t.Fatalf("after Served: added %d (%v)", added, err)
	}
}

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
