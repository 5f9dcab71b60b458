package podannotation

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// An Address is one entry of AnnotationAddresses: one public address of
// the Pod.
//
// An elastic public IP (EIP) is one entry with addressId, address (the
// public IP, every port) and isp only; the port fields are left out.
type Address struct {
	// Pool is namespace/name of the PortPool.
	Pool string `json:"pool,omitempty"`
	// Protocol as requested: TCP, UDP, TCP_UDP, TCP_SSL or QUIC.
	Protocol string `json:"protocol,omitempty"`
	// ContainerPort the address forwards to.
	ContainerPort int32 `json:"containerPort,omitempty"`
	// LoadBalancerID of the CLB.
	LoadBalancerID string `json:"loadBalancerId,omitempty"`
	// AddressID is the EIP's id (eip-…).
	AddressID string `json:"addressId,omitempty"`
	// VIPs of the CLB.
	VIPs []string `json:"vips,omitempty"`
	// Port is the public port, the first of the segment.
	Port int32 `json:"port,omitempty"`
	// EndPort is the last public port of a segment; absent for one port.
	EndPort int32 `json:"endPort,omitempty"`
	// Address is "vip:port" (or "vip:port-endPort") of the first VIP.
	Address string `json:"address,omitempty"`
	// ISP of the VIP.
	ISP string `json:"isp,omitempty"`
	// External is the pool's opaque string.
	External string `json:"external,omitempty"`
}

// A BCSBinding is one entry of BCSAnnotationBindings, in the shape
// bcs-ingress-controller wrote, so that applications reading it keep
// working.
type BCSBinding struct {
	PoolName              string            `json:"poolName"`
	PoolNamespace         string            `json:"poolNamespace"`
	LoadBalancerIDs       []string          `json:"loadBalancerIDs,omitempty"`
	PoolItemLoadBalancers []BCSLoadBalancer `json:"poolItemLoadBalancers,omitempty"`
	// PoolItemName is always empty: our pools have no items.
	PoolItemName string `json:"poolItemName"`
	// Protocol is TCP, UDP, TCP_SSL or QUIC; a TCP_UDP address is written
	// as two entries, as bcs did.
	Protocol  string `json:"protocol"`
	StartPort int32  `json:"startPort"`
	// EndPort is 0 for one port.
	EndPort int32 `json:"endPort"`
	// RsStartPort is the container port.
	RsStartPort int32  `json:"rsStartPort"`
	External    string `json:"external,omitempty"`
}

// A BCSLoadBalancer describes a load balancer of a BCSBinding.
type BCSLoadBalancer struct {
	LoadBalancerName string `json:"loadbalancerName"`
	LoadBalancerID   string `json:"loadbalancerID"`
	Region           string `json:"region"`
	// Type is OPEN or INTERNAL.
	Type string   `json:"type"`
	IPs  []string `json:"ips"`
}

// ResultAnnotations returns the annotations that tell a Pod its addresses:
// AnnotationAddresses and AnnotationStatus always, and for a Pod that used
// the bcs syntax also BCSAnnotationBindings and BCSAnnotationStatus.
// Entries are sorted (by container port, protocol, pool, load balancer) so
// that the same bindings always give the same text and the Pod is not
// patched for nothing.
func ResultAnnotations(syntax string, bindings []v1alpha1.PortBinding, ready bool) map[string]string {
	status := StatusNotReady
	if ready {
		status = StatusReady
	}
	out := map[string]string{
		AnnotationAddresses: mustJSON(Addresses(bindings)),
		AnnotationStatus:    status,
	}
	if syntax == SyntaxBCS {
		out[BCSAnnotationBindings] = mustJSON(BCSBindings(bindings))
		out[BCSAnnotationStatus] = status
	}
	return out
}

// EIPResultAnnotations tells a Pod its elastic public IP in the same two
// annotations as ports: AnnotationAddresses with one entry (none while the
// EIP has no address yet) and AnnotationStatus.
func EIPResultAnnotations(addressID, publicIP, isp string, ready bool) map[string]string {
	status := StatusNotReady
	if ready {
		status = StatusReady
	}
	entries := []Address{}
	if publicIP != "" {
		entries = append(entries, Address{AddressID: addressID, Address: publicIP, ISP: isp})
	}
	return map[string]string{AnnotationAddresses: mustJSON(entries), AnnotationStatus: status}
}

// Addresses converts bindings to the entries of AnnotationAddresses, sorted.
// It never returns nil, so that no bindings read "[]".
func Addresses(bindings []v1alpha1.PortBinding) []Address {
	out := make([]Address, 0, len(bindings))
	for _, b := range bindings {
		addr := b.Address
		if addr == "" && len(b.VIPs) > 0 {
			addr = FormatAddress(b.VIPs[0], b.Port, b.EndPort)
		}
		out = append(out, Address{
			Pool: b.Pool, Protocol: b.Protocol, ContainerPort: b.ContainerPort,
			LoadBalancerID: b.LoadBalancerID, VIPs: b.VIPs, Port: b.Port, EndPort: b.EndPort,
			Address: addr, ISP: b.ISP, External: b.External,
		})
	}
	slices.SortFunc(out, func(a, b Address) int {
		return cmp.Or(cmp.Compare(a.ContainerPort, b.ContainerPort), strings.Compare(a.Protocol, b.Protocol),
			strings.Compare(a.Pool, b.Pool), strings.Compare(a.LoadBalancerID, b.LoadBalancerID), cmp.Compare(a.Port, b.Port))
	})
	return out
}

// BCSBindings converts bindings to the entries of BCSAnnotationBindings,
// sorted. Bindings of one pool, protocol and container port on the same
// public port are one entry with several load balancers, as a bcs pool
// item was.
func BCSBindings(bindings []v1alpha1.PortBinding) []BCSBinding {
	type key struct {
		pool, protocol        string
		container, start, end int32
	}
	index := map[key]int{}
	out := make([]BCSBinding, 0, len(bindings))
	for _, b := range bindings {
		lb := BCSLoadBalancer{LoadBalancerName: b.LoadBalancerName, LoadBalancerID: b.LoadBalancerID, Region: b.Region, Type: b.LoadBalancerType, IPs: b.VIPs}
		if lb.IPs == nil {
			lb.IPs = []string{}
		}
		for _, proto := range v1alpha1.ListenerProtocols(b.Protocol) {
			k := key{b.Pool, proto, b.ContainerPort, b.Port, b.EndPort}
			if i, ok := index[k]; ok {
				if !slices.Contains(out[i].LoadBalancerIDs, b.LoadBalancerID) {
					out[i].LoadBalancerIDs = append(out[i].LoadBalancerIDs, b.LoadBalancerID)
					out[i].PoolItemLoadBalancers = append(out[i].PoolItemLoadBalancers, lb)
				}
				continue
			}
			ns, name := "", b.Pool
			if nn, ok := v1alpha1.ParsePoolKey(b.Pool); ok {
				ns, name = nn.Namespace, nn.Name
			}
			index[k] = len(out)
			out = append(out, BCSBinding{
				PoolName: name, PoolNamespace: ns,
				LoadBalancerIDs:       []string{b.LoadBalancerID},
				PoolItemLoadBalancers: []BCSLoadBalancer{lb},
				Protocol:              proto, StartPort: b.Port, EndPort: b.EndPort, RsStartPort: b.ContainerPort,
				External: b.External,
			})
		}
	}
	for i := range out {
		slices.SortFunc(out[i].PoolItemLoadBalancers, func(a, b BCSLoadBalancer) int {
			return strings.Compare(a.LoadBalancerID, b.LoadBalancerID)
		})
		slices.Sort(out[i].LoadBalancerIDs)
	}
	slices.SortFunc(out, func(a, b BCSBinding) int {
		return cmp.Or(cmp.Compare(a.RsStartPort, b.RsStartPort), strings.Compare(a.Protocol, b.Protocol),
			strings.Compare(a.PoolNamespace, b.PoolNamespace), strings.Compare(a.PoolName, b.PoolName),
			cmp.Compare(a.StartPort, b.StartPort))
	})
	return out
}

// ParseAddresses reads AnnotationAddresses, for applications and tests.
func ParseAddresses(value string) ([]Address, error) {
	var out []Address
	err := json.Unmarshal([]byte(value), &out)
	return out, err
}

// FormatAddress writes vip:port or vip:port-end, an IPv6 vip in brackets
// ([vip]:port) as URLs write it.
func FormatAddress(vip string, port, end int32) string {
	host := vip
	if strings.Contains(vip, ":") {
		host = "[" + vip + "]"
	}
	s := host + ":" + strconv.Itoa(int(port))
	if end > port {
		s += "-" + strconv.Itoa(int(end))
	}
	return s
}

// mustJSON marshals this package's structs of strings, numbers and
// slices, for which encoding/json has no error to return.
func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
