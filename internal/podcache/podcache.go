// Package podcache keeps the provider's Pod cache small: the manager
// caches every Pod of the cluster, and the controllers read a few fields
// of each.
package podcache

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/intern"
)

// Transform is the Pod cache's transform (it replaces the default one that
// strips managed fields, so it strips them too). Anything else passes
// unchanged.
// Strings Pods share are interned in t.
func Transform(t *intern.Table) func(any) (any, error) {
	return func(in any) (any, error) {
		if pod, ok := in.(*corev1.Pod); ok {
			return Slim(t, pod), nil
		}
		return in, nil
	}
}

// Slim returns the Pod with only the fields the provider reads. This is the
// one list of them; a controller that reads another Pod field from the
// cache adds it here (TestSlimKeepsWhatControllersRead lists them too).
//
//   - metadata, all but managed fields: names, UID, resourceVersion,
//     labels (policies, TargetSet selectors, random hostPort counts),
//     annotations (requests and results), owners, deletion, creation time;
//   - spec.nodeName (NodePort backends, node targets), spec.hostNetwork,
//     spec.readinessGates (the address condition);
//   - containers and init containers: name, ports (containerPort,
//     hostPort, protocol, name: port requests, HostPort backends,
//     TargetSet ports) and restartPolicy (an init container that is a
//     sidecar serves its ports);
//   - status.phase (terminated Pods hold no host ports), conditions (kept
//     whole: the strategic merge patch of the address condition orders
//     them), hostIP(s) and podIP(s).
//
// Everything else (env, volumes, images, resources, probes, tolerations,
// affinity, container statuses…) is dropped. The Pods are only ever
// patched (a strategic merge of what changed), never updated from the
// cache, so nothing dropped here is written back.
//
// The strings Pods share (namespace, annotation keys, container and port
// names, node, host IP, condition types) are interned: one copy for all.
func Slim(t *intern.Table, pod *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: pod.ObjectMeta}
	out.ManagedFields = nil
	t.Meta(&out.ObjectMeta)
	out.Spec = corev1.PodSpec{
		NodeName:       intern.Of(t, pod.Spec.NodeName),
		HostNetwork:    pod.Spec.HostNetwork,
		ReadinessGates: pod.Spec.ReadinessGates,
		Containers:     containers(t, pod.Spec.Containers),
		InitContainers: containers(t, pod.Spec.InitContainers),
	}
	for i := range out.Spec.ReadinessGates {
		g := &out.Spec.ReadinessGates[i]
		g.ConditionType = intern.Of(t, g.ConditionType)
	}
	out.Status = corev1.PodStatus{
		Phase:      intern.Of(t, pod.Status.Phase),
		Conditions: pod.Status.Conditions,
		HostIP:     intern.Of(t, pod.Status.HostIP),
		HostIPs:    pod.Status.HostIPs,
		PodIP:      pod.Status.PodIP,
		PodIPs:     pod.Status.PodIPs,
	}
	for i := range out.Status.Conditions {
		c := &out.Status.Conditions[i]
		c.Type, c.Status, c.Reason = intern.Of(t, c.Type), intern.Of(t, c.Status), intern.Of(t, c.Reason)
	}
	for i := range out.Status.HostIPs {
		out.Status.HostIPs[i].IP = intern.Of(t, out.Status.HostIPs[i].IP)
	}
	return out
}

func containers(t *intern.Table, cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		for j := range c.Ports {
			p := &c.Ports[j]
			p.Name, p.Protocol, p.HostIP = intern.Of(t, p.Name), intern.Of(t, p.Protocol), intern.Of(t, p.HostIP)
		}
		out[i] = corev1.Container{Name: intern.Of(t, c.Name), Ports: c.Ports, RestartPolicy: c.RestartPolicy}
	}
	return out
}
