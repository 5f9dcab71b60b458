package pods

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

const addressReady = corev1.PodConditionType(podannotation.ConditionAddressReady)

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

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
		Conditions:        []corev1.PodCondition{{Type: addressReady, Status: corev1.ConditionTrue}},
	}
	pod := Of(rp)
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
	if c := condition(pod, corev1.PodReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("Ready %+v, want True", c)
	}
	if c := condition(pod, addressReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("address condition %+v, want the one told", c)
	}
	if rp.Spec.Annotations["old"] != "x" {
		t.Error("Of changed the RemotePod's spec")
	}
}

// TestRemotePodsServed: watches wait until the kind is served, and reads
// are off until then.
func TestRemotePodsServed(t *testing.T) {
	x := &Remote{}
	added := 0
	if err := x.Watch(func() error { added++; return nil }); err != nil || added != 0 || x.On() {
		t.Fatalf("before Served: added %d, on %t (%v)", added, x.On(), err)
	}
	if err := x.Served(); err != nil || added != 1 || !x.On() {
		t.Fatalf("Served: added %d, on %t (%v)", added, x.On(), err)
	}
	if err := x.Watch(func() error { added++; return nil }); err != nil || added != 2 {
		t.Fatalf("after Served: added %d (%v)", added, err)
	}
}
