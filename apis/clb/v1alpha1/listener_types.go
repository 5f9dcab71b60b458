package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// Certificate is the server (and optional client CA) certificate of an
// HTTPS, TCP_SSL or QUIC listener, by SSL certificate id.
// +kubebuilder:validation:XValidation:rule="!has(self.sslMode) || self.sslMode != 'MUTUAL' || has(self.certCaId)",message="sslMode MUTUAL needs certCaId, the client CA certificate"
type Certificate struct {
	// SSLMode is UNIDIRECTIONAL (server only, default) or MUTUAL.
	// +kubebuilder:validation:Enum=UNIDIRECTIONAL;MUTUAL
	// +optional
	SSLMode *string `json:"sslMode,omitempty"`

	// CertID is the id of the server certificate.
	// +kubebuilder:validation:MinLength=1
	CertID string `json:"certId"`

	// CertCaID is the id of the client CA certificate; required for MUTUAL.
	// +optional
	CertCaID *string `json:"certCaId,omitempty"`
}

// ListenerParameters are the configurable fields of a listener.
// +kubebuilder:validation:XValidation:rule="!has(self.endPort) || self.endPort > self.port",message="endPort must be greater than port"
// +kubebuilder:validation:XValidation:rule="!has(self.endPort) || self.protocol in ['TCP', 'UDP']",message="a port range (endPort) is only for TCP and UDP listeners"
// +kubebuilder:validation:XValidation:rule="!(self.protocol in ['HTTPS', 'TCP_SSL', 'QUIC']) || has(self.certificate)",message="HTTPS, TCP_SSL and QUIC listeners need a certificate"
// +kubebuilder:validation:XValidation:rule="!has(self.certificate) || self.protocol in ['HTTPS', 'TCP_SSL', 'QUIC']",message="certificate applies to HTTPS, TCP_SSL and QUIC listeners only"
// +kubebuilder:validation:XValidation:rule="!(self.protocol in ['HTTP', 'HTTPS']) || !has(self.scheduler) && !has(self.sessionExpireTime) && !has(self.healthCheck)",message="HTTP and HTTPS listeners take scheduler, sessionExpireTime and healthCheck on their Rules"
// +kubebuilder:validation:XValidation:rule="has(self.region) == has(oldSelf.region)",message="region cannot be set or unset after creation"
type ListenerParameters struct {
	// Region of the cloud resource, e.g. ap-shanghai; the provider
	// config's region when unset. Set it on every resource of a load
	// balancer in another region: references do not carry it.
	// +kubebuilder:validation:Pattern=`^[a-z]+-[a-z0-9-]+$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="region is immutable"
	// +optional
	Region *string `json:"region,omitempty"`

	// LoadBalancerID is the load balancer (lb-…) of the listener.
	// +crossplane:generate:reference:type=LoadBalancer
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="loadBalancerId is immutable; create a new Listener"
	// +optional
	LoadBalancerID *string `json:"loadBalancerId,omitempty"`

	// LoadBalancerIDRef references a LoadBalancer to fill loadBalancerId.
	// +optional
	LoadBalancerIDRef *xpv2.NamespacedReference `json:"loadBalancerIdRef,omitempty"`

	// LoadBalancerIDSelector selects a LoadBalancer to fill loadBalancerId.
	// +optional
	LoadBalancerIDSelector *xpv2.NamespacedSelector `json:"loadBalancerIdSelector,omitempty"`

	// Protocol is TCP, UDP, HTTP, HTTPS, TCP_SSL or QUIC.
	// +kubebuilder:validation:Enum=TCP;UDP;HTTP;HTTPS;TCP_SSL;QUIC
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="protocol is immutable; create a new Listener"
	Protocol string `json:"protocol"`

	// Port the listener listens on.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="port is immutable; create a new Listener"
	Port int64 `json:"port"`

	// EndPort makes a TCP or UDP listener listen on the port range
	// port..endPort; target port P+i then receives listener port port+i.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="endPort is immutable; create a new Listener"
	// +optional
	EndPort *int64 `json:"endPort,omitempty"`

	// Name of the listener in the cloud. Defaults to metadata.name.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Name *string `json:"name,omitempty"`

	// HealthCheck of a layer-4 listener's targets.
	// +optional
	HealthCheck *HealthCheck `json:"healthCheck,omitempty"`

	// Scheduler is WRR (weighted round robin), LEAST_CONN or IP_HASH.
	// +kubebuilder:validation:Enum=WRR;LEAST_CONN;IP_HASH
	// +optional
	Scheduler *string `json:"scheduler,omitempty"`

	// SessionExpireTime keeps a client on one target for this many seconds
	// (30-3600); 0 turns session persistence off.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:validation:XValidation:rule="self == 0 || self >= 30",message="sessionExpireTime is 0 (off) or 30-3600 seconds"
	// +optional
	SessionExpireTime *int64 `json:"sessionExpireTime,omitempty"`

	// Certificate of an HTTPS, TCP_SSL or QUIC listener.
	// +optional
	Certificate *Certificate `json:"certificate,omitempty"`
}

// ListenerObservation is the observed state of a listener.
type ListenerObservation struct {
	// ID is the listener id, lbl-….
	ID string `json:"id,omitempty"`
	// LoadBalancerID the listener belongs to.
	LoadBalancerID string `json:"loadBalancerId,omitempty"`
	// VIPs of the load balancer.
	VIPs []string `json:"vips,omitempty"`
	// Addresses are VIP:port (or VIP:port-endPort) of every VIP.
	Addresses []string `json:"addresses,omitempty"`
	// CreateTime as reported by the cloud.
	CreateTime string `json:"createTime,omitempty"`
	// Task is the last asynchronous task the provider started.
	Task TaskStatus `json:"task,omitempty"`
}

// A ListenerSpec defines the desired state of a Listener.
type ListenerSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              ListenerParameters `json:"forProvider"`
}

// A ListenerStatus represents the observed state of a Listener.
type ListenerStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 ListenerObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A Listener is one listener of a CLB instance: a port or a port range for
// one protocol. Its external name is the listener id (lbl-…).
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="PROTOCOL",type="string",JSONPath=".spec.forProvider.protocol"
// +kubebuilder:printcolumn:name="PORT",type="integer",JSONPath=".spec.forProvider.port"
// +kubebuilder:printcolumn:name="ADDRESS",type="string",JSONPath=".status.atProvider.addresses[0]"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,tencentcloud}
type Listener struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ListenerSpec   `json:"spec"`
	Status ListenerStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ListenerList contains a list of Listener.
type ListenerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Listener `json:"items"`
}
