package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// States of a CLBPodBinding or CLBNodeBinding (status.state): the names
// tke-extend writes. The provider writes those its PodAddress states map
// to (docs/migrate-tke-extend.md); the others stay accepted, so that the
// objects tke-extend left in a cluster remain valid.
const (
	BindingStatePending                = "Pending"
	BindingStateAllocated              = "Allocated"
	BindingStateBound                  = "Bound"
	BindingStateWaitBackend            = "WaitBackend"
	BindingStateNoBackend              = "NoBackend"
	BindingStateNodeTypeNotSupported   = "NodeTypeNotSupported"
	BindingStateDisabled               = "Disabled"
	BindingStateFailed                 = "Failed"
	BindingStatePortPoolNotFound       = "PortPoolNotFound"
	BindingStateNoPortAvailable        = "NoPortAvailable"
	BindingStateDeleting               = "Deleting"
	BindingStatePortPoolNotAllocatable = "PortPoolNotAllocatable"
)

// The schema below is tke-extend's, field by field, with no rule of ours
// added: our CRD replaces tke-extend's in a cluster that holds its
// objects, and each of them must stay valid as it is.

// PortEntry is one port a binding asks for (a line of the Pod's
// clb-port-mapping).
type PortEntry struct {
	// Port is the container port.
	Port int32 `json:"port"`
	// Protocol is TCP, UDP, TCPUDP, TCP_SSL or QUIC.
	// +kubebuilder:validation:Enum=TCP;UDP;TCPUDP;TCP_SSL;QUIC
	Protocol string `json:"protocol"`
	// Pools are the CLBPortPools the port gets an address in, one each.
	Pools []string `json:"pools"`
	// UseSamePortAcrossPools asks for the same public port in every pool.
	// +optional
	UseSamePortAcrossPools *bool `json:"useSamePortAcrossPools,omitempty"`
	// CertSecretName names the Secret holding the certificate ID of a
	// TCP_SSL or QUIC port.
	// +optional
	CertSecretName *string `json:"certSecretName,omitempty"`
}

// CLBBindingSpec is what the Pod (or Node) asked for.
type CLBBindingSpec struct {
	// Disabled is true while the Pod is isolated (enable-clb-port-mapping
	// "false"): ports kept, targets deregistered.
	// +optional
	Disabled *bool `json:"disabled,omitempty"`
	// Ports asked for.
	Ports []PortEntry `json:"ports"`
}

// PortBindingStatus is one listener a port is bound through.
type PortBindingStatus struct {
	// Port is the container port.
	Port int32 `json:"port"`
	// Protocol of the listener: TCP, UDP, TCP_SSL or QUIC (a TCPUDP port
	// has one entry of each).
	Protocol string `json:"protocol"`
	// CertID is the certificate of a TCP_SSL or QUIC listener.
	// +optional
	CertID *string `json:"certId,omitempty"`
	// Pool is the pool the port came from.
	Pool string `json:"pool"`
	// Region of the load balancer.
	Region string `json:"region"`
	// LoadbalancerID is lb-….
	LoadbalancerID string `json:"loadbalancerId"`
	// LoadbalancerPort is the public port (the first of a segment).
	LoadbalancerPort int32 `json:"loadbalancerPort"`
	// LoadbalancerEndPort is the last public port of a segment.
	// +optional
	LoadbalancerEndPort *int32 `json:"loadbalancerEndPort,omitempty"`
	// ListenerID is lbl-….
	ListenerID string `json:"listenerId"`
	// AddressIPVersion of the load balancer.
	// +optional
	AddressIPVersion *string `json:"addressIPVersion,omitempty"`
}

// CLBBindingStatus is where the ports are bound.
type CLBBindingStatus struct {
	// State of the binding (the BindingState constants).
	// +kubebuilder:default=Pending
	State string `json:"state"`
	// Message says why the binding is in its state.
	// +optional
	Message string `json:"message,omitempty"`
	// PortBindings are the listeners the ports are bound through.
	// +optional
	PortBindings []PortBindingStatus `json:"portBindings,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cpb
// +kubebuilder:printcolumn:name="State",type="string",JSONPath=".status.state",description="State"

// A CLBPodBinding is tke-extend-network-controller v2's record of a Pod's
// CLB ports, served read-only: the provider writes one for each Pod that
// asks in tke-extend's syntax, a mirror of the Pod's PodAddress, owned by
// it. It is output only; edits are overwritten.
type CLBPodBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CLBBindingSpec   `json:"spec,omitempty"`
	Status CLBBindingStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CLBPodBindingList contains a list of CLBPodBinding.
type CLBPodBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CLBPodBinding `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cnb
// +kubebuilder:printcolumn:name="State",type="string",JSONPath=".status.state",description="State"

// A CLBNodeBinding is tke-extend-network-controller v2's record of a
// Node's CLB ports (port-range listeners to the Node, asked for by Node
// annotations). The provider writes it, read-only, from the Node's
// PodAddress (tke-port-pools/node.<node>), so that its users' reads work;
// tke-extend's own stay valid (docs/migrate-tke-extend.md).
type CLBNodeBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CLBBindingSpec   `json:"spec,omitempty"`
	Status CLBBindingStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CLBNodeBindingList contains a list of CLBNodeBinding.
type CLBNodeBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CLBNodeBinding `json:"items"`
}
