package podannotation

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// ResolvePort resolves a request against the Pod's containers (and sidecar
// init containers, which keep running): a port name becomes its number, an
// empty protocol the container port's, and hostPort is the hostPort the
// container declares for that number and protocol (0 if none).
//
// A name no container declares is an error. A number no container
// declares is allowed (the process may listen without declaring it); its
// protocol then defaults to TCP. SCTP cannot be exposed through a CLB.
func ResolvePort(pod *corev1.Pod, pr v1alpha1.PortRequest) (port int32, protocol string, hostPort int32, err error) {
	if pr.Protocol != "" {
		p, ok := canonicalProtocol(pr.Protocol)
		if !ok {
			return 0, "", 0, fmt.Errorf("port %s: protocol %q: protocol must be TCP, UDP, TCP_UDP, TCP_SSL or QUIC", pr.Port.String(), pr.Protocol)
		}
		protocol = p
	}
	declared := servedPorts(pod)

	// A number that arrived as a string ("8000" in YAML quotes) is still a
	// number.
	byName := pr.Port.Type == intstr.String && !isDigits(pr.Port.StrVal)
	var named *corev1.ContainerPort
	if byName {
		for i := range declared {
			if declared[i].Name == pr.Port.StrVal {
				named = &declared[i]
				break
			}
		}
		if named == nil {
			return 0, "", 0, fmt.Errorf("no container port is named %q", pr.Port.StrVal)
		}
		port = named.ContainerPort
	} else {
		n := pr.Port.IntValue()
		if pr.Port.Type == intstr.String {
			n, _ = strconv.Atoi(pr.Port.StrVal) // digits only; overflow lands out of range below
		}
		if n < 1 || n > 65535 {
			return 0, "", 0, fmt.Errorf("port %s: a port number must be 1-65535", pr.Port.String())
		}
		port = int32(n)
	}

	var same []corev1.ContainerPort // every declaration of the number
	for _, cp := range declared {
		if cp.ContainerPort == port {
			same = append(same, cp)
		}
	}

	if protocol == "" {
		switch {
		case named != nil:
			protocol = l4(named.Protocol)
		default:
			var protos []string
			for _, cp := range same {
				if p := l4(cp.Protocol); !slices.Contains(protos, p) {
					protos = append(protos, p)
				}
			}
			switch len(protos) {
			case 0:
				protocol = v1alpha1.ProtocolTCP
			case 1:
				protocol = protos[0]
			default:
				slices.Sort(protos)
				return 0, "", 0, fmt.Errorf("port %d is declared for %v: say which protocol (TCP, UDP or TCP_UDP)", port, protos)
			}
		}
		if protocol == string(corev1.ProtocolSCTP) {
			return 0, "", 0, fmt.Errorf("port %s is SCTP, which a CLB cannot forward: ask for TCP or UDP", pr.Port.String())
		}
	}

	// The hostPort of the declarations whose protocol the request carries.
	for _, cp := range same {
		if cp.HostPort == 0 || !slices.Contains(l4Of(protocol), l4(cp.Protocol)) {
			continue
		}
		if hostPort != 0 && hostPort != cp.HostPort {
			return 0, "", 0, fmt.Errorf("port %d/%s maps to hostPorts %d and %d: a %s address needs one", port, protocol, hostPort, cp.HostPort, protocol)
		}
		hostPort = cp.HostPort
	}
	return port, protocol, hostPort, nil
}

// servedPorts are the ports of the containers and of the init containers
// that keep running next to them.
func servedPorts(pod *corev1.Pod) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c.Ports...)
		}
	}
	for _, c := range pod.Spec.Containers {
		out = append(out, c.Ports...)
	}
	return out
}

// l4 is a container port's protocol, TCP when unset (as the API server
// defaults it).
func l4(p corev1.Protocol) string {
	if p == "" {
		return v1alpha1.ProtocolTCP
	}
	return string(p)
}

// l4Of is the transport protocols a requested protocol listens on.
func l4Of(protocol string) []string {
	var out []string
	for _, p := range v1alpha1.ListenerProtocols(protocol) {
		if p == v1alpha1.ProtocolUDP || p == v1alpha1.ProtocolQUIC {
			out = append(out, v1alpha1.ProtocolUDP)
		} else {
			out = append(out, v1alpha1.ProtocolTCP)
		}
	}
	return out
}

// ReadinessGates returns the address conditions the Pod's readiness gates
// wait for: ConditionAddressReady, BCSConditionPortBindingReady (a Pod
// created while bcs was in charge), both or neither. The provider sets
// each of them when the Pod's addresses are bound.
func ReadinessGates(pod *corev1.Pod) []corev1.PodConditionType {
	var out []corev1.PodConditionType
	for _, g := range pod.Spec.ReadinessGates {
		switch g.ConditionType {
		case ConditionAddressReady, BCSConditionPortBindingReady:
			if !slices.Contains(out, g.ConditionType) {
				out = append(out, g.ConditionType)
			}
		}
	}
	return out
}
