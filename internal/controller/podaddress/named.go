package podaddress

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/allocation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// namedAddresses returns the annotations the Pod's port requests name
// (PortRequest.AddressAnnotation), each set to that port's public
// addresses in the order of the request's pools, joined by ",": "VIP:port",
// the value tke-extend-network-controller writes for addressPodAnnotation.
// A port with no registered address yet has no entry.
func namedAddresses(pod *corev1.Pod, ports []v1alpha1.PortRequest, bs []v1alpha1.PortBinding) map[string]string {
	out := map[string]string{}
	for _, pr := range ports {
		if pr.AddressAnnotation == "" {
			continue
		}
		port, proto, _, err := podannotation.ResolvePort(pod, pr)
		if err != nil {
			continue
		}
		var addrs []string
		for _, p := range pr.Pools {
			w := allocation.Port{Pool: p.Key(pod.GetNamespace()), ContainerPort: port, Protocol: proto}
			for _, b := range bs {
				if w.Of(b) && b.Address != "" {
					addrs = append(addrs, b.Address)
				}
			}
		}
		if len(addrs) > 0 {
			out[pr.AddressAnnotation] = strings.Join(addrs, ",")
		}
	}
	return out
}

// withNamedAddresses adds the named address annotations to want and lists
// them in AnnotationNamedAddresses; it returns the keys the Pod has from an
// earlier write that are asked for no longer, to be removed.
func withNamedAddresses(pod *corev1.Pod, want, named map[string]string) (remove []string) {
	maps.Copy(want, named)
	names := slices.Sorted(maps.Keys(named))
	if len(names) > 0 {
		want[podannotation.AnnotationNamedAddresses] = strings.Join(names, ",")
	}
	before, ok := pod.Annotations[podannotation.AnnotationNamedAddresses]
	if !ok {
		return nil
	}
	if len(names) == 0 {
		remove = append(remove, podannotation.AnnotationNamedAddresses)
	}
	for n := range strings.SplitSeq(before, ",") {
		if _, still := named[n]; !still && n != "" {
			if _, has := pod.Annotations[n]; has {
				remove = append(remove, n)
			}
		}
	}
	return remove
}
