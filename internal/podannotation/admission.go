package podannotation

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// What the Pod admission webhook reads and writes.
const (
	// NamespaceLabelAdmission "enabled" on a namespace sends its new Pods
	// to the provider's admission webhook.
	NamespaceLabelAdmission = "network.tencentcloud.crossplane.io/admission"
	// BCSNamespaceLabelInject "true" on a namespace does the same, as it
	// did for bcs-ingress-controller's webhook.
	BCSNamespaceLabelInject = "bcs-ingress-controller-inject"

	// AnnotationAllocateAtAdmission "true" asks the webhook to allocate a
	// Pod's ports when it is admitted and to put them in its environment
	// (EnvVarPrefix). A bcs-syntax Pod is allocated at admission unless it
	// says "false": bcs always did.
	AnnotationAllocateAtAdmission = "network.tencentcloud.crossplane.io/allocate-at-admission"

	// EnvVarPrefix starts the name of the variables injected at admission,
	// BCS_PORTPOOL_PORT_VIPLIST_<PROTOCOL>_<CONTAINER PORT>, the names bcs
	// applications read.
	EnvVarPrefix = "BCS_PORTPOOL_PORT_VIPLIST_"
)

// AllocateAtAdmission reports whether a Pod whose request is in syntax
// wants its addresses at admission.
func AllocateAtAdmission(pod *corev1.Pod, syntax string) bool {
	v, ok := pod.GetAnnotations()[AnnotationAllocateAtAdmission]
	if !ok {
		return syntax == SyntaxBCS
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	return err == nil && b
}

// EnvVarName is the variable that holds the addresses of a container port
// and a listener protocol (TCP, UDP, TCP_SSL or QUIC).
func EnvVarName(protocol string, containerPort int32) string {
	return EnvVarPrefix + protocol + "_" + strconv.Itoa(int(containerPort))
}

// EnvVars are the variables of bindings: one per container port and
// listener protocol (a TCP_UDP port gives a TCP and a UDP variable, as
// bcs did), whose value is every VIP of every pool with its port,
// "vip:port[,vip:port…]" ("vip:port-endPort" for a segment, IPv6 in
// brackets), in the order of the bindings. Sorted by name.
func EnvVars(bindings []v1alpha1.PortBinding) []corev1.EnvVar {
	values := map[string][]string{}
	for _, b := range bindings {
		for _, p := range v1alpha1.ListenerProtocols(b.Protocol) {
			n := EnvVarName(p, b.ContainerPort)
			for _, vip := range b.VIPs {
				values[n] = append(values[n], FormatAddress(vip, b.Port, b.EndPort))
			}
		}
	}
	out := make([]corev1.EnvVar, 0, len(values))
	for n, v := range values {
		out = append(out, corev1.EnvVar{Name: n, Value: strings.Join(v, ",")})
	}
	slices.SortFunc(out, func(a, b corev1.EnvVar) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// SetEnv sets vars in every container and init container of the Pod,
// replacing variables of the same name.
func SetEnv(pod *corev1.Pod, vars []corev1.EnvVar) {
	set := func(cs []corev1.Container) {
		for i := range cs {
			for _, v := range vars {
				if j := slices.IndexFunc(cs[i].Env, func(e corev1.EnvVar) bool { return e.Name == v.Name }); j >= 0 {
					cs[i].Env[j] = v
				} else {
					cs[i].Env = append(cs[i].Env, v)
				}
			}
		}
	}
	set(pod.Spec.InitContainers)
	set(pod.Spec.Containers)
}

// AddReadinessGate adds ConditionAddressReady to the Pod's readiness gates
// unless it is there; it reports whether it added it.
func AddReadinessGate(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == ConditionAddressReady {
			return false
		}
	}
	pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: ConditionAddressReady})
	return true
}
