package podannotation

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// tke-extend's HostPort scheme: a Node carries the same
// enable-clb-port-mapping and clb-port-mapping annotations as a Pod
// ("7000 TCPUDP pool-a": with a pool of segmentLength 1001, one
// port-range listener per protocol forwards 1001 public ports to the
// node's ports 7000-8000), and a Pod with enable-clb-hostport-mapping
// "true" (and no clb-hostport-mapping lines) is told, in
// clb-hostport-mapping-result, the public port of each hostPort it holds
// in such a range.
//
// A Node's ports are held by the PodAddress TKENodeAddressName(node) of
// TKEPoolNamespace, served as a Pod whose IP is the node's: one allocator
// and one record for every slot of a pool.

// TKENodeAddressPrefix starts the name of a Node's PodAddress. Names with
// it in TKEPoolNamespace are the Nodes': no Pod of that namespace is
// served under one.
const TKENodeAddressPrefix = "node."

// TKENodeAddressName is the key of the PodAddress that holds node's ports.
func TKENodeAddressName(node string) types.NamespacedName {
	return types.NamespacedName{Namespace: TKEPoolNamespace, Name: TKENodeAddressPrefix + node}
}

// TKENodeOf returns the Node whose ports the PodAddress of key holds.
func TKENodeOf(key types.NamespacedName) (string, bool) {
	if key.Namespace != TKEPoolNamespace || !strings.HasPrefix(key.Name, TKENodeAddressPrefix) {
		return "", false
	}
	node := strings.TrimPrefix(key.Name, TKENodeAddressPrefix)
	return node, node != ""
}

// TKENodeHostPorts reports whether a Pod asks to be told the addresses of
// its hostPorts on its Node's listeners: enable-clb-hostport-mapping
// "true" without clb-hostport-mapping lines (with lines, each port gets a
// slot of its own instead, see parseTKE).
func TKENodeHostPorts(a map[string]string) bool {
	_, lines := a[TKEAnnotationHostPortMapping]
	return !lines && strings.EqualFold(strings.TrimSpace(a[TKEAnnotationEnableHostPortMapping]), "true")
}

// TKENodeHostPortResult is what a Pod that asks with TKENodeHostPorts is
// told, from the bindings of its Node's PodAddress: one entry per hostPort
// of the Pod's containers (TCP or UDP) and per binding whose listener of
// that protocol covers it, the public port moved as far from the binding's
// first public port as the hostPort is from its first node port. The
// caller has checked that the Pod runs on that Node (it holds its
// hostPorts there). Entries in tke-extend's order: the Pod's container
// ports as declared (an Agones TCPUDP port is UDP then TCP), each one's
// bindings in the order tke-extend keeps a Node's (pool, load balancer,
// public port, node port); none when no hostPort is covered.
func TKENodeHostPortResult(pod *corev1.Pod, node []v1alpha1.PortBinding) []TKEHostPortMapping {
	bs := slices.Clone(node)
	slices.SortStableFunc(bs, func(a, b v1alpha1.PortBinding) int {
		return cmp.Or(strings.Compare(TKEPoolName(a.Pool), TKEPoolName(b.Pool)), strings.Compare(a.LoadBalancerID, b.LoadBalancerID),
			cmp.Compare(a.Port, b.Port), cmp.Compare(a.ContainerPort, b.ContainerPort))
	})
	out := []TKEHostPortMapping{}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			proto := cmp.Or(string(p.Protocol), string(corev1.ProtocolTCP))
			for _, b := range bs {
				lbPort, ok := coveredPort(b, p.HostPort)
				id := b.ListenerIDs[proto]
				if !ok || id == "" || !slices.Contains(v1alpha1.ListenerProtocols(b.Protocol), proto) {
					continue
				}
				m := TKEHostPortMapping{
					ContainerPort: p.ContainerPort, HostPort: p.HostPort, Protocol: proto, Pool: TKEPoolName(b.Pool),
					Region: b.Region, LoadbalancerID: b.LoadBalancerID, LoadbalancerPort: lbPort, ListenerID: id,
					Hostname: b.Hostname,
				}
				host := b.Hostname
				if host == "" {
					m.IPs = b.VIPs
					if len(b.VIPs) > 0 {
						host = b.VIPs[0]
					}
				}
				if host != "" {
					m.Address = host + ":" + strconv.Itoa(int(lbPort))
				}
				out = append(out, m)
			}
		}
	}
	return out
}

// coveredPort returns the public port of hostPort on b: b forwards public
// ports Port..EndPort to node ports ContainerPort.. (one port when EndPort
// is 0).
func coveredPort(b v1alpha1.PortBinding, hostPort int32) (int32, bool) {
	last := b.ContainerPort + max(b.EndPort-b.Port, 0)
	if hostPort < b.ContainerPort || hostPort > last {
		return 0, false
	}
	return b.Port + hostPort - b.ContainerPort, true
}

// TKENodeHostPortAnnotations are the annotations of a Pod told entries:
// the result and the status Ready, as tke-extend writes them.
func TKENodeHostPortAnnotations(entries []TKEHostPortMapping) map[string]string {
	return map[string]string{TKEAnnotationHostPortMappingResult: mustJSON(entries), TKEAnnotationHostPortMappingStatus: StatusReady}
}
