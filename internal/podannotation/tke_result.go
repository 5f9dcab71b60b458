package podannotation

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// A TKEPortMapping is one entry of TKEAnnotationMappingResult, with the
// field names, order and omissions of tke-extend-network-controller v2,
// so that what reads its result (a game server through the downward API,
// OpenKruiseGame's TencentCloud-CLB plugin) keeps working. A TCPUDP port
// is two entries, TCP and UDP, as there.
type TKEPortMapping struct {
	// Port is the container port.
	Port int32 `json:"port"`
	// Protocol is TCP, UDP, TCP_SSL or QUIC.
	Protocol string `json:"protocol"`
	// CertID is the Pod's own certificate (its certSecret's), where
	// tke-extend puts it; omitted when the pool's serves the port.
	CertID string `json:"certId,omitempty"`
	// Pool as the Pod named it: "name" for a pool of TKEPoolNamespace,
	// else "namespace/name".
	Pool             string `json:"pool"`
	Region           string `json:"region"`
	LoadbalancerID   string `json:"loadbalancerId"`
	LoadbalancerPort int32  `json:"loadbalancerPort"`
	// LoadbalancerEndPort is the last public port of a segment.
	LoadbalancerEndPort int32  `json:"loadbalancerEndPort,omitempty"`
	ListenerID          string `json:"listenerId"`
	// AddressIPVersion is the load balancer's IP version as the cloud
	// answered it (ipv4, ipv6), where tke-extend puts it; omitted when
	// unknown, as there.
	AddressIPVersion string `json:"addressIPVersion,omitempty"`
	// EndPort is the last container port a segment forwards to.
	EndPort int32 `json:"endPort,omitempty"`
	// Hostname is a domain-based load balancer's name; it has then no
	// IPs, as tke-extend writes it.
	Hostname string `json:"hostname,omitempty"`
	// IPs are the load balancer's VIPs.
	IPs []string `json:"ips,omitempty"`
	// Address is "<hostname or first VIP>:<loadbalancerPort>", IPv6
	// unbracketed as tke-extend writes it; empty while the load balancer
	// has neither.
	Address string `json:"address"`
}

// A TKEHostPortMapping is one entry of TKEAnnotationHostPortMappingResult,
// in tke-extend-network-controller v2's shape.
type TKEHostPortMapping struct {
	ContainerPort    int32    `json:"containerPort"`
	HostPort         int32    `json:"hostPort"`
	Protocol         string   `json:"protocol"`
	Pool             string   `json:"pool"`
	Region           string   `json:"region"`
	LoadbalancerID   string   `json:"loadbalancerId"`
	LoadbalancerPort int32    `json:"loadbalancerPort"`
	ListenerID       string   `json:"listenerId"`
	Address          string   `json:"address"`
	Hostname         string   `json:"hostname,omitempty"`
	IPs              []string `json:"ips,omitempty"`
}

// TKEResultAnnotations returns the annotations tke-extend writes for a
// Pod that asked in its syntax: for the ports of TKEAnnotationPortMapping
// TKEAnnotationMappingResult and TKEAnnotationMappingStatus, for those of
// TKEAnnotationHostPortMapping TKEAnnotationHostPortMappingResult and
// TKEAnnotationHostPortMappingStatus. ports and backend are the
// PodAddress's spec: a port whose backend is HostPort came from the
// hostPort lines (the tke-extend syntax takes no backend annotation).
//
// As tke-extend, they are written only once every port forwards to the
// Pod (ready), with the status Ready: it never writes another status.
// Until then, while the Pod is isolated (enable-clb-port-mapping "false":
// targets gone, ports kept) and while its ports wait or move, nil is
// returned and the Pod keeps what it was last told, or nothing. OpenKruiseGame's
// TencentCloud-CLB plugin reads the result only when the status is Ready,
// so a GameServer whose network is disabled keeps its address, as there.
func TKEResultAnnotations(ports []v1alpha1.PortRequest, backend string, bindings []v1alpha1.PortBinding, ready bool) map[string]string {
	if !ready {
		return nil
	}
	type portKey struct {
		port     int32
		protocol string
	}
	hostPort := map[portKey]bool{}
	var anyPort, anyHostPort bool
	for _, pr := range ports {
		b := cmp.Or(pr.Backend, backend)
		isHost := b == v1alpha1.BackendHostPort
		if pr.Port.Type == intstr.Int {
			hostPort[portKey{pr.Port.IntVal, pr.Protocol}] = isHost
		}
		anyHostPort = anyHostPort || isHost
		anyPort = anyPort || !isHost
	}
	mappings := []TKEPortMapping{}
	hostMappings := []TKEHostPortMapping{}
	for _, b := range bindings {
		for _, proto := range v1alpha1.ListenerProtocols(b.Protocol) {
			m := TKEPortMapping{
				Port: b.ContainerPort, Protocol: proto, CertID: b.CertID, Pool: TKEPoolName(b.Pool), Region: b.Region,
				LoadbalancerID: b.LoadBalancerID, LoadbalancerPort: b.Port, ListenerID: b.ListenerIDs[proto],
				AddressIPVersion: b.AddressIPVersion, Hostname: b.Hostname,
			}
			// tke-extend: a load balancer with a hostname is told by it
			// alone; one without, by its VIPs.
			host := b.Hostname
			if host == "" {
				m.IPs = b.VIPs
				if len(b.VIPs) > 0 {
					host = b.VIPs[0]
				}
			}
			if host != "" {
				m.Address = host + ":" + strconv.Itoa(int(b.Port))
			}
			if !hostPort[portKey{b.ContainerPort, b.Protocol}] {
				if b.EndPort > b.Port {
					m.LoadbalancerEndPort = b.EndPort
					m.EndPort = b.ContainerPort + (b.EndPort - b.Port)
				}
				mappings = append(mappings, m)
				continue
			}
			hostMappings = append(hostMappings, TKEHostPortMapping{
				ContainerPort: m.Port, HostPort: b.TargetPort, Protocol: m.Protocol, Pool: m.Pool, Region: m.Region,
				LoadbalancerID: m.LoadbalancerID, LoadbalancerPort: m.LoadbalancerPort, ListenerID: m.ListenerID,
				Address: m.Address, Hostname: m.Hostname, IPs: m.IPs,
			})
		}
	}
	// tke-extend's order: pool, load balancer, public port, container
	// port, protocol.
	slices.SortFunc(mappings, func(a, b TKEPortMapping) int {
		return cmp.Or(strings.Compare(a.Pool, b.Pool), strings.Compare(a.LoadbalancerID, b.LoadbalancerID),
			cmp.Compare(a.LoadbalancerPort, b.LoadbalancerPort), cmp.Compare(a.Port, b.Port), strings.Compare(a.Protocol, b.Protocol))
	})
	slices.SortFunc(hostMappings, func(a, b TKEHostPortMapping) int {
		return cmp.Or(strings.Compare(a.Pool, b.Pool), strings.Compare(a.LoadbalancerID, b.LoadbalancerID),
			cmp.Compare(a.LoadbalancerPort, b.LoadbalancerPort), cmp.Compare(a.ContainerPort, b.ContainerPort), strings.Compare(a.Protocol, b.Protocol))
	})
	out := map[string]string{}
	if anyPort {
		out[TKEAnnotationMappingResult] = mustJSON(mappings)
		out[TKEAnnotationMappingStatus] = StatusReady
	}
	if anyHostPort {
		out[TKEAnnotationHostPortMappingResult] = mustJSON(hostMappings)
		out[TKEAnnotationHostPortMappingStatus] = StatusReady
	}
	return out
}

// TKEResult reads the clb-port-mapping-result that
// tke-extend-network-controller (or this provider) wrote on a Pod whose
// clb-port-mapping-status is Ready. ok is false when the Pod has no such
// result; err when the result is not tke-extend's JSON. A Pod's
// annotations are written by whoever may edit the Pod: callers check every
// entry against what the cloud shows before acting on it.
func TKEResult(annotations map[string]string) (entries []TKEPortMapping, ok bool, err error) {
	v, has := annotations[TKEAnnotationMappingResult]
	if !has || annotations[TKEAnnotationMappingStatus] != StatusReady {
		return nil, false, nil
	}
	if err := json.Unmarshal([]byte(v), &entries); err != nil {
		return nil, false, fmt.Errorf("%s is not a list of port mappings: %w", TKEAnnotationMappingResult, err)
	}
	return entries, true, nil
}
