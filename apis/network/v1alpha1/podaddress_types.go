package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// PodAddress states.
const (
	// StatePending: the request is known, nothing is allocated yet.
	StatePending = "Pending"
	// StateAllocated: ports are allocated (and recorded here), targets are
	// being registered.
	StateAllocated = "Allocated"
	// StateBound: every address forwards to the Pod.
	StateBound = "Bound"
	// StateWaitBackend: allocated, waiting for the Pod's IP or node.
	StateWaitBackend = "WaitBackend"
	// StateNoPortAvailable: a pool has no free port; the binding waits.
	StateNoPortAvailable = "NoPortAvailable"
	// StatePoolNotFound: a pool does not exist or is not Ready.
	StatePoolNotFound = "PoolNotFound"
	// StateHeld: the Pod is gone; its ports are kept for a Pod of the same
	// name until releaseAt.
	StateHeld = "Held"
	// StatePoolNotAllowed: a pool named by the request does not serve
	// the PodAddress's namespace (its spec.consumers); the message names
	// the pool and its rule. Its bindings in that pool are released.
	StatePoolNotAllowed = "PoolNotAllowed"
	// StateInvalid: the request cannot be served (e.g. an unknown port
	// name); the message says why.
	StateInvalid = "Invalid"
	// StateIsolated: the Pod is out of service by request: its ports stay
	// allocated and its addresses recorded, but no target is registered.
	StateIsolated = "Isolated"
	// StateQuotaExceeded: an EIP cannot be allocated (the account's EIP
	// quota or the daily allocation limit is reached) and no fallback pool
	// is named; allocation is retried with a growing backoff.
	StateQuotaExceeded = "QuotaExceeded"
	// StateNotGranted: an EIP was asked for and no EIPGrant covering the
	// namespace admits the request (none covers it, or the request exceeds
	// its limits); nothing is sent to the cloud. The message names the
	// grant and the limit. Also: a port's certSecret names a certificate
	// no grant gives the namespace; the message names both.
	StateNotGranted = "NotGranted"
	// StateFallbackPort: an EIP was asked for but could not be allocated;
	// the Pod is bound to ports of the fallback pool instead. The message
	// says why.
	StateFallbackPort = "FallbackPort"
)

// Serving reports whether a PodAddress in state forwards every address to
// its Pod: Bound, or bound to the fallback pool's ports.
func Serving(state string) bool { return state == StateBound || state == StateFallbackPort }

// WaitsOnSomeone reports whether a PodAddress in state stays unbound until
// a person acts: more ports, a pool that exists, a valid request, a higher
// EIP quota. Such states set Synced=False, which Argo CD's built-in check
// for crossplane.io groups reads as Degraded; every other state is work
// under way (or done) and keeps Synced=True.
func WaitsOnSomeone(state string) bool {
	switch state {
	case StateNoPortAvailable, StatePoolNotFound, StatePoolNotAllowed, StateInvalid, StateQuotaExceeded, StateNotGranted:
		return true
	}
	return false
}

// PodAddressSpec is what one Pod asked for: ports from PortPools, or one
// elastic public IP (eip).
// +kubebuilder:validation:XValidation:rule="has(self.eip) != (has(self.ports) && size(self.ports) > 0)",message="ask for ports or for an eip, exactly one of them"
type PodAddressSpec struct {
	// PodUID is the Pod instance the addresses currently serve. A new Pod
	// of the same name (a StatefulSet Pod recreated) takes over the
	// binding and its ports.
	// +optional
	PodUID string `json:"podUID,omitempty"`

	// Ports to expose. Empty when the Pod asks for an EIP.
	// +optional
	Ports []PortRequest `json:"ports,omitempty"`

	// EIP asks for one elastic public IP bound to the Pod's IP (its ENI),
	// instead of ports.
	// +optional
	EIP *EIPRequest `json:"eip,omitempty"`

	// Strategy is Dynamic (default) or Ordinal.
	// +kubebuilder:validation:Enum=Dynamic;Ordinal
	// +optional
	Strategy string `json:"strategy,omitempty"`

	// KeepDuration keeps the ports (or the EIP) of a deleted Pod for a new
	// Pod of the same name for this long; then they return to the pool
	// (the EIP is released).
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$')",message="keepDuration is a non-negative duration such as 30s, 5m or 2h45m (units ns, us, ms, s, m, h)"
	// +optional
	KeepDuration *metav1.Duration `json:"keepDuration,omitempty"`

	// Retain keeps the ports of a deleted Pod for a new Pod of the same
	// name with no time limit: until the PodAddress is deleted. It wins
	// over keepDuration. Set from tke-extend's retain annotation.
	// +optional
	Retain bool `json:"retain,omitempty"`

	// Backend is PodIP (default), HostPort or NodePort.
	// +kubebuilder:validation:Enum=PodIP;HostPort;NodePort
	// +optional
	Backend string `json:"backend,omitempty"`

	// Isolated takes the Pod out of service: its targets are deregistered
	// while its ports and addresses are kept, and registered again when
	// it is false. Set from the Pod's isolation annotations.
	// +optional
	Isolated bool `json:"isolated,omitempty"`

	// Source says what asked for the addresses: an annotation syntax or a
	// PodAddressPolicy.
	// +optional
	Source string `json:"source,omitempty"`
}

// PortBinding is one public address of a Pod.
type PortBinding struct {
	// Pool is namespace/name of the PortPool.
	Pool string `json:"pool"`
	// Protocol as requested (TCP, UDP, TCP_UDP, TCP_SSL, QUIC).
	Protocol string `json:"protocol"`
	// ContainerPort is the Pod's port.
	ContainerPort int32 `json:"containerPort"`
	// LoadBalancerID of the public address.
	LoadBalancerID string `json:"loadBalancerId"`
	// LoadBalancerName and LoadBalancerType (OPEN or INTERNAL) of it.
	LoadBalancerName string `json:"loadBalancerName,omitempty"`
	LoadBalancerType string `json:"loadBalancerType,omitempty"`
	// Region of the load balancer.
	Region string `json:"region,omitempty"`
	// ISP of the VIP.
	ISP string `json:"isp,omitempty"`
	// VIPs of the load balancer.
	VIPs []string `json:"vips,omitempty"`
	// Hostname of a domain-based load balancer, reached by that name
	// rather than its VIPs (the pool's status.atProvider hostname).
	Hostname string `json:"hostname,omitempty"`
	// Port is the public port (the first of a segment).
	Port int32 `json:"port"`
	// EndPort is the last public port of a segment; 0 for one port.
	EndPort int32 `json:"endPort,omitempty"`
	// ListenerIDs by protocol (TCP, UDP…).
	ListenerIDs map[string]string `json:"listenerIds,omitempty"`
	// AddressIPVersion of the load balancer as the cloud answered it
	// (ipv4, ipv6) when the port was allocated.
	// +optional
	AddressIPVersion string `json:"addressIPVersion,omitempty"`
	// IPv6Mode of an IPv6 load balancer (IPv6Nat64 or IPv6FullChain) when
	// the port was allocated: an IPv6FullChain one forwards to the Pod's
	// IPv6 address, any other to its IPv4 address.
	// +optional
	IPv6Mode string `json:"ipv6Mode,omitempty"`
	// CertID is the certificate of this binding's TCP_SSL or QUIC
	// listeners: the one the port's certSecret names, granted to the
	// Pod's namespace. The PortPool puts it on the slot's listeners while
	// the binding holds the slot and its own certificate back after.
	// Empty: the pool's certificate.
	// +optional
	CertID string `json:"certId,omitempty"`
	// TargetIP and TargetPort are where the load balancer forwards.
	TargetIP   string `json:"targetIP,omitempty"`
	TargetPort int32  `json:"targetPort,omitempty"`
	// InstanceID is the CVM target of the NodePort backend.
	InstanceID string `json:"instanceId,omitempty"`
	// Address is VIP:port (or VIP:port-endPort) of the first VIP.
	Address string `json:"address,omitempty"`
	// External is the pool's opaque external string.
	External string `json:"external,omitempty"`
}

// PodAddressStatus is the source of truth of a Pod's addresses: the
// allocator rebuilds its state from these at start-up.
type PodAddressStatus struct {
	xpv2.ConditionedStatus `json:",inline"`

	// State of the binding.
	State string `json:"state,omitempty"`
	// Message explains the state.
	Message string `json:"message,omitempty"`
	// Bindings are the allocated public addresses.
	Bindings []PortBinding `json:"bindings,omitempty"`
	// ReleaseAt is when held ports return to the pool.
	ReleaseAt *metav1.Time `json:"releaseAt,omitempty"`
	// BoundAt is when every address was first bound for the current Pod.
	BoundAt *metav1.Time `json:"boundAt,omitempty"`
	// EIP is the elastic public IP of a Pod that asked for one.
	// +optional
	EIP *EIPBinding `json:"eip,omitempty"`
	// Seal is the provider's signature over this status and the
	// PodAddress it belongs to, made with a key only the provider reads.
	// A status without a valid seal was not written by the provider: its
	// bindings and EIP are ignored, never acted on.
	// +optional
	Seal string `json:"seal,omitempty"`
}

// +kubebuilder:object:root=true

// A PodAddress binds one Pod (same name, same namespace) to public
// addresses from PortPools. The provider creates it for Pods that ask by
// annotation or match a PodAddressPolicy.
// +kubebuilder:printcolumn:name="STATE",type="string",JSONPath=".status.state"
// +kubebuilder:printcolumn:name="ADDRESS",type="string",JSONPath=".status.bindings[0].address"
// +kubebuilder:printcolumn:name="EIP",type="string",JSONPath=".status.eip.publicIp"
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,tencentcloud},shortName=pa
type PodAddress struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodAddressSpec   `json:"spec"`
	Status PodAddressStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PodAddressList contains a list of PodAddress.
type PodAddressList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodAddress `json:"items"`
}
