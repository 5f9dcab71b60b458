package podannotation

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Annotations (and OpenKruiseGame's label) that take a Pod out of service:
// its targets are deregistered and its addresses kept. Ours, and those of
// the systems Pods may come from, so that their isolation switches keep
// working.
const (
	// AnnotationIsolated "true" isolates the Pod; "false" or absence does
	// not. It wins over the others.
	AnnotationIsolated = "network.tencentcloud.crossplane.io/isolated"
	// TKEAnnotationEnableMapping is tke-extend-network-controller's switch:
	// "false" keeps the binding and unbinds the targets.
	TKEAnnotationEnableMapping = "networking.cloud.tencent.com/enable-clb-port-mapping"
	// OKGLabelNetworkDisabled is the Pod label OpenKruiseGame's GameServer
	// controller sets from the GameServer's spec.networkDisabled: "true"
	// isolates. A label, not an annotation: OKG writes it nowhere else.
	OKGLabelNetworkDisabled = "game.kruise.io/network-disabled"
)

// Isolated reports whether the Pod asks to be out of service. Only our own
// annotation is checked strictly: a value other than true or false is an
// error for the Pod's owner. The foreign switches act only on the value
// that isolates in their own system, and are ignored otherwise.
func Isolated(pod *corev1.Pod) (bool, error) {
	a := pod.GetAnnotations()
	if v, ok := a[AnnotationIsolated]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return false, fmt.Errorf("%s %q: must be \"true\" or \"false\"", AnnotationIsolated, v)
		}
		return b, nil
	}
	if v, ok := a[TKEAnnotationEnableMapping]; ok && strings.EqualFold(strings.TrimSpace(v), "false") {
		return true, nil
	}
	return strings.EqualFold(strings.TrimSpace(pod.GetLabels()[OKGLabelNetworkDisabled]), "true"), nil
}
