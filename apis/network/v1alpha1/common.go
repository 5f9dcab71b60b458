package v1alpha1

import (
	"errors"

	"k8s.io/apimachinery/pkg/util/intstr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// Protocols a Pod port can ask for. TCP_UDP binds the same public port for
// both.
const (
	ProtocolTCP    = "TCP"
	ProtocolUDP    = "UDP"
	ProtocolTCPUDP = "TCP_UDP"
	ProtocolTCPSSL = "TCP_SSL"
	ProtocolQUIC   = "QUIC"
)

// ListenerProtocols are the protocols of the listeners a port asking for
// protocol binds to: TCP and UDP for TCP_UDP, else protocol itself.
func ListenerProtocols(protocol string) []string {
	if protocol == ProtocolTCPUDP {
		return []string{ProtocolTCP, ProtocolUDP}
	}
	return []string{protocol}
}

// Allocation strategies.
const (
	// StrategyDynamic takes the first free port of the pool.
	StrategyDynamic = "Dynamic"
	// StrategyOrdinal gives StatefulSet Pod N the port
	// startPort + N × segmentLength.
	StrategyOrdinal = "Ordinal"
)

// Backends: what the load balancer forwards to.
const (
	// BackendPodIP targets the Pod IP (VPC-CNI direct ENI, or hostNetwork).
	BackendPodIP = "PodIP"
	// BackendHostPort targets the node's IP and the container's hostPort.
	BackendHostPort = "HostPort"
	// BackendNodePort targets the node (CVM instance) and a NodePort.
	BackendNodePort = "NodePort"
)

// PoolRef names a PortPool; the namespace defaults to the Pod's.
type PoolRef struct {
	// Name of the PortPool.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Namespace of the PortPool; defaults to the Pod's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// PortRequest asks for a public address for one container port.
type PortRequest struct {
	// Port is the container port, by number or by name.
	Port intstr.IntOrString `json:"port"`

	// Protocol is TCP, UDP, TCP_UDP, TCP_SSL or QUIC. Defaults to the
	// container port's protocol.
	// +kubebuilder:validation:Enum=TCP;UDP;TCP_UDP;TCP_SSL;QUIC
	// +optional
	Protocol string `json:"protocol,omitempty"`

	// Pools to bind in; one public address per pool (e.g. one per ISP).
	// +kubebuilder:validation:MinItems=1
	Pools []PoolRef `json:"pools"`

	// SamePortAcrossPools gives this port the same public port in every
	// one of its pools (tke-extend's useSamePortAcrossPools): the lowest
	// port free in all of them, taken in all of them or in none. The pools
	// need the same segmentLength and port ranges that share slots (with
	// the Ordinal strategy, the same startPort). When one pool's binding
	// has to move, it moves to the same port on another load balancer of
	// that pool, or, when that port is taken there, every binding of the
	// port moves to a new port free in all the pools.
	// +optional
	SamePortAcrossPools bool `json:"samePortAcrossPools,omitempty"`

	// CertSecret names a Secret of the Pod's namespace whose
	// qcloud_cert_id is the certificate of this port's TCP_SSL or QUIC
	// listeners (tke-extend's certSecret). The certificate must be granted
	// to the Pod's namespace (docs/security.md); otherwise the PodAddress
	// is NotGranted.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	CertSecret string `json:"certSecret,omitempty"`

	// NodePort is the node port that forwards to this container port, for
	// the NodePort backend.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	NodePort *int32 `json:"nodePort,omitempty"`

	// Backend, when set, is this port's backend in place of the one of the
	// PodAddress (or policy): PodIP, HostPort or NodePort. A bcs
	// "<port>/hostport" line sets HostPort on its port only.
	// +kubebuilder:validation:Enum=PodIP;HostPort;NodePort
	// +optional
	Backend string `json:"backend,omitempty"`

	// AddressAnnotation names a Pod annotation that the provider sets to
	// this port's public address, "VIP:port" (VIP:port-endPort for a
	// segment; several addresses, one per pool, joined by ","), as
	// tke-extend-network-controller's addressPodAnnotation does. The
	// annotation is removed when the port has no address.
	// +optional
	AddressAnnotation string `json:"addressAnnotation,omitempty"`
}

// SyncedCondition is the Synced condition of a status whose Ready says the
// rest: ReconcileError with msg (the message users see on Ready) when the
// object waits on a person, else ReconcileSuccess. Argo CD's built-in
// check for crossplane.io groups reads Synced=False as Degraded and
// Ready=False alone as Progressing.
func SyncedCondition(waitsOnSomeone bool, msg string) xpv2.Condition {
	if !waitsOnSomeone {
		return xpv2.ReconcileSuccess()
	}
	return xpv2.ReconcileError(errors.New(msg))
}
