package podaddress

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// TestTKEPodTold: a Pod that asks in tke-extend's syntax, with both
// variants, is asked for as it wrote (the hostPort lines' port on the
// HostPort backend), and told in our annotations and in tke-extend's, each
// variant in its own; telling it again changes nothing.
func TestTKEPodTold(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "game", Name: "room-0", Annotations: map[string]string{
		podannotation.TKEAnnotationEnableMapping:         "true",
		podannotation.TKEAnnotationPortMapping:           "8000 UDP pool-a",
		podannotation.TKEAnnotationEnableHostPortMapping: "true",
		podannotation.TKEAnnotationHostPortMapping:       "7654 TCP pool-b",
	}}}
	a, err := (&Reconciler{}).request(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if a.syntax != podannotation.SyntaxTKEExtend || a.spec.Source != "annotation/tke-extend" || a.spec.Backend != v1alpha1.BackendPodIP ||
		len(a.spec.Ports) != 2 || a.spec.Ports[0].Backend != "" || a.spec.Ports[1].Backend != v1alpha1.BackendHostPort {
		t.Fatalf("ask %+v: want the tke-extend syntax, 8000/UDP on the Pod IP and 7654/TCP on HostPort", a)
	}
	// Waiting for its ports (a pool not found, none free): ours says
	// NotReady, tke-extend's are not written, as tke-extend writes them
	// only once the ports are bound.
	waiting := pod.DeepCopy()
	if !annotate(waiting, a, &v1alpha1.PodAddress{Spec: a.spec}, false) || waiting.Annotations[podannotation.AnnotationStatus] != podannotation.StatusNotReady {
		t.Errorf("waiting: %s = %q, want NotReady", podannotation.AnnotationStatus, waiting.Annotations[podannotation.AnnotationStatus])
	}
	for _, k := range []string{podannotation.TKEAnnotationMappingStatus, podannotation.TKEAnnotationMappingResult,
		podannotation.TKEAnnotationHostPortMappingStatus, podannotation.TKEAnnotationHostPortMappingResult} {
		if v, ok := waiting.Annotations[k]; ok {
			t.Errorf("waiting: %s = %q written; tke-extend writes nothing before the ports are bound", k, v)
		}
	}
	pa := &v1alpha1.PodAddress{Spec: a.spec, Status: v1alpha1.PodAddressStatus{Bindings: []v1alpha1.PortBinding{
		{Pool: "tke-port-pools/pool-a", Protocol: "UDP", ContainerPort: 8000, LoadBalancerID: "lb-a", Region: "ap-chengdu",
			VIPs: []string{"1.1.1.1"}, Port: 30000, ListenerIDs: map[string]string{"UDP": "lbl-a"}, TargetIP: "10.0.0.5", TargetPort: 8000},
		{Pool: "tke-port-pools/pool-b", Protocol: "TCP", ContainerPort: 7654, LoadBalancerID: "lb-b", Region: "ap-chengdu",
			VIPs: []string{"2.2.2.2"}, Port: 31000, ListenerIDs: map[string]string{"TCP": "lbl-b"}, TargetIP: "192.168.0.9", TargetPort: 7100},
	}}}
	if !annotate(pod, a, pa, true) {
		t.Fatal("annotate changed nothing on a Pod told nothing yet")
	}
	for _, k := range []string{podannotation.AnnotationStatus, podannotation.TKEAnnotationMappingStatus, podannotation.TKEAnnotationHostPortMappingStatus} {
		if pod.Annotations[k] != podannotation.StatusReady {
			t.Errorf("%s = %q, want Ready", k, pod.Annotations[k])
		}
	}
	var ports []podannotation.TKEPortMapping
	if err := json.Unmarshal([]byte(pod.Annotations[podannotation.TKEAnnotationMappingResult]), &ports); err != nil || len(ports) != 1 ||
		ports[0].Port != 8000 || ports[0].Pool != "pool-a" || ports[0].Address != "1.1.1.1:30000" {
		t.Errorf("%s = %s (%v), want 8000/UDP of pool-a at 1.1.1.1:30000 only", podannotation.TKEAnnotationMappingResult,
			pod.Annotations[podannotation.TKEAnnotationMappingResult], err)
	}
	var host []podannotation.TKEHostPortMapping
	if err := json.Unmarshal([]byte(pod.Annotations[podannotation.TKEAnnotationHostPortMappingResult]), &host); err != nil || len(host) != 1 ||
		host[0].ContainerPort != 7654 || host[0].HostPort != 7100 || host[0].Address != "2.2.2.2:31000" {
		t.Errorf("%s = %s (%v), want 7654/TCP with hostPort 7100 at 2.2.2.2:31000 only", podannotation.TKEAnnotationHostPortMappingResult,
			pod.Annotations[podannotation.TKEAnnotationHostPortMappingResult], err)
	}
	if annotate(pod, a, pa, true) {
		t.Error("telling the same again changed the Pod")
	}
	// Not serving (isolated, waiting, moving): ours says NotReady,
	// tke-extend's keep what they said, as tke-extend leaves them.
	result := pod.Annotations[podannotation.TKEAnnotationMappingResult]
	if !annotate(pod, a, pa, false) || pod.Annotations[podannotation.AnnotationStatus] != podannotation.StatusNotReady {
		t.Errorf("not serving: %s = %q, want NotReady", podannotation.AnnotationStatus, pod.Annotations[podannotation.AnnotationStatus])
	}
	for _, k := range []string{podannotation.TKEAnnotationMappingStatus, podannotation.TKEAnnotationHostPortMappingStatus} {
		if pod.Annotations[k] != podannotation.StatusReady {
			t.Errorf("not serving: %s = %q, want Ready kept", k, pod.Annotations[k])
		}
	}
	if pod.Annotations[podannotation.TKEAnnotationMappingResult] != result {
		t.Errorf("not serving: %s changed to %s", podannotation.TKEAnnotationMappingResult, pod.Annotations[podannotation.TKEAnnotationMappingResult])
	}
}
