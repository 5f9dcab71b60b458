package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// Allocation policies of a PortPool: which load balancer a new binding
// lands on.
const (
	// PolicyLeastUsed picks the load balancer with the fewest allocated
	// ports, spreading Pods (and the blast radius of an attack on one VIP).
	PolicyLeastUsed = "LeastUsed"
	// PolicyInOrder fills load balancers one after the other.
	PolicyInOrder = "InOrder"
	// PolicyRandom picks any load balancer with a free port.
	PolicyRandom = "Random"
)

// PoolListenerSettings configure the listeners a pool pre-creates.
type PoolListenerSettings struct {
	// HealthCheck of the targets.
	// +optional
	HealthCheck *HealthCheck `json:"healthCheck,omitempty"`

	// Scheduler is WRR, LEAST_CONN or IP_HASH.
	// +kubebuilder:validation:Enum=WRR;LEAST_CONN;IP_HASH
	// +optional
	Scheduler *string `json:"scheduler,omitempty"`

	// SessionExpireTime in seconds (30-3600); 0 turns persistence off.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:validation:XValidation:rule="self == 0 || self >= 30",message="sessionExpireTime is 0 (off) or 30-3600 seconds"
	// +optional
	SessionExpireTime *int64 `json:"sessionExpireTime,omitempty"`

	// Certificate of the pool's TCP_SSL listeners (the cloud requires one)
	// and QUIC listeners (optional there); it is sent when the listeners are
	// created, and other protocols get none.
	// +optional
	Certificate *Certificate `json:"certificate,omitempty"`
}

// PoolAutoCreate grows a pool by creating load balancers when it runs low.
type PoolAutoCreate struct {
	// MaxLoadBalancers bounds how many load balancers the pool creates.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MaxLoadBalancers int64 `json:"maxLoadBalancers"`

	// MinFreeSlots is the free capacity (ports or segments) below which a
	// new load balancer is created. Defaults to 1: grow when full.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinFreeSlots *int64 `json:"minFreeSlots,omitempty"`

	// Template of the load balancers to create. Each is tagged with the
	// pool, so that a restarted provider finds and keeps them. They are
	// created in the provider config's region, so region is refused.
	// +kubebuilder:validation:XValidation:rule="!has(self.region)",message="auto-created load balancers are in the provider config's region; template.region is not supported"
	Template LoadBalancerParameters `json:"template"`
}

// PortPoolParameters define a pool of public ports over load balancers.
// +kubebuilder:validation:XValidation:rule="self.endPort >= self.startPort",message="endPort must not be below startPort"
// +kubebuilder:validation:XValidation:rule="!has(self.segmentLength) || self.endPort - self.startPort + 1 >= self.segmentLength",message="segmentLength is longer than the port range: one segment (one port-range listener) needs endPort at least startPort + segmentLength - 1, and a listener's ports end at 65535"
// +kubebuilder:validation:XValidation:rule="!has(self.segmentLength) || self.endPort - self.startPort + 1 < self.segmentLength || (self.endPort - self.startPort + 1) % self.segmentLength == 0",message="the port range must be a whole number of segments"
// +kubebuilder:validation:XValidation:rule="!has(self.segmentLength) || self.segmentLength == 1 || !has(self.protocols) || self.protocols.all(p, p in ['TCP', 'UDP'])",message="segments (port-range listeners) are only for TCP and UDP"
// +kubebuilder:validation:XValidation:rule="has(self.loadBalancerIds) || has(self.loadBalancerIdRefs) || has(self.loadBalancerIdSelector) || has(self.autoCreate)",message="give load balancers (ids, references or a selector) or autoCreate"
type PortPoolParameters struct {
	// LoadBalancerIDs are the load balancers of the pool: lb-… in the
	// provider config's region, or region:lb-… for another region.
	// +optional
	LoadBalancerIDs []string `json:"loadBalancerIds,omitempty"`

	// LoadBalancerIDRefs reference LoadBalancers of the pool, besides
	// loadBalancerIds. They are resolved at every reconcile and never
	// copied into loadBalancerIds, so removing a reference removes its
	// load balancer from the pool; one not Ready yet is left out until it
	// is.
	// +optional
	LoadBalancerIDRefs []xpv2.NamespacedReference `json:"loadBalancerIdRefs,omitempty"`

	// LoadBalancerIDSelector selects LoadBalancers of the pool, like
	// loadBalancerIdRefs, at every reconcile.
	// +optional
	LoadBalancerIDSelector *xpv2.NamespacedSelector `json:"loadBalancerIdSelector,omitempty"`

	// StartPort is the first public port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="startPort is immutable"
	StartPort int64 `json:"startPort"`

	// EndPort is the last public port. It may grow but not shrink.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:validation:XValidation:rule="self >= oldSelf",message="endPort may grow but not shrink"
	EndPort int64 `json:"endPort"`

	// SegmentLength gives each binding a segment of this many consecutive
	// ports through one port-range listener. Defaults to 1 (one port). A
	// port-range listener may span any ports of 1-65535, so the bound is
	// the pool's port range (one segment at least); a segment of N ports
	// forwards to N consecutive target ports, which must end by 65535 too.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="segmentLength is immutable"
	// +optional
	SegmentLength *int64 `json:"segmentLength,omitempty"`

	// Protocols of the listeners pre-created on every port: TCP, UDP,
	// TCP_SSL or QUIC. [TCP, UDP] serves TCP_UDP bindings. Defaults to TCP.
	// +kubebuilder:validation:items:Enum=TCP;UDP;TCP_SSL;QUIC
	// +kubebuilder:validation:MaxItems=2
	// +listType=set
	// +optional
	Protocols []string `json:"protocols,omitempty"`

	// Listener settings of every pre-created listener.
	// +optional
	Listener *PoolListenerSettings `json:"listener,omitempty"`

	// AllocationPolicy is LeastUsed (default), InOrder or Random.
	// +kubebuilder:validation:Enum=LeastUsed;InOrder;Random
	// +optional
	AllocationPolicy *string `json:"allocationPolicy,omitempty"`

	// Blacklist lists load balancers that get no new bindings, e.g. one
	// under attack; existing bindings stay.
	// +optional
	Blacklist []string `json:"blacklist,omitempty"`

	// Drain lists load balancers of the pool that get no new bindings and
	// whose bindings move to the pool's other load balancers: each Pod is
	// given a new address there and told. The pool's listeners stay, so
	// taking a load balancer off this list makes it usable again.
	// +optional
	Drain []string `json:"drain,omitempty"`

	// External is an opaque string passed to every bound Pod in its
	// address annotation, e.g. a region label for a matchmaker.
	// +optional
	External *string `json:"external,omitempty"`

	// AutoCreate grows the pool with new load balancers when free ports run
	// low.
	// +optional
	AutoCreate *PoolAutoCreate `json:"autoCreate,omitempty"`
}

// PoolLoadBalancerStatus is one load balancer of a pool.
type PoolLoadBalancerStatus struct {
	// ID of the load balancer.
	ID string `json:"id"`
	// Name of the load balancer in the cloud.
	Name string `json:"name,omitempty"`
	// Type is OPEN or INTERNAL.
	Type string `json:"type,omitempty"`
	// Region of the load balancer.
	Region string `json:"region,omitempty"`
	// VIPs of the load balancer.
	VIPs []string `json:"vips,omitempty"`
	// Domain of the load balancer.
	Domain string `json:"domain,omitempty"`
	// Hostname is the name a domain-based (or classic public) load
	// balancer is reached by, its VIPs not being fixed: the cloud's
	// Domain field, empty for a load balancer reached by its VIPs.
	Hostname string `json:"hostname,omitempty"`
	// ISP of the VIP (BGP, CMCC, CUCC, CTCC).
	ISP string `json:"isp,omitempty"`
	// AutoCreated is true for load balancers the pool created itself.
	AutoCreated bool `json:"autoCreated,omitempty"`
	// State is Ready (all listeners exist), Creating, NotFound,
	// Blacklisted, Draining (in drain: its bindings move), Removed (no
	// longer in the pool: shown until its bindings have moved and the
	// pool's listeners there are deleted) or NotOwned (its owner tags name
	// another namespace: the pool writes nothing there and its bindings
	// move).
	State string `json:"state"`
	// ListenersReady counts the pool's listeners that exist.
	ListenersReady int64 `json:"listenersReady"`
	// ListenersWanted is how many listeners the pool needs here.
	ListenersWanted int64 `json:"listenersWanted"`
	// Allocated slots (ports or segments) on this load balancer.
	Allocated int64 `json:"allocated"`
	// AllocatedListeners counts the listeners the bindings here use: one
	// per protocol of each binding's port or segment (TCP_UDP two).
	// +optional
	AllocatedListeners int64 `json:"allocatedListeners,omitempty"`
	// AddressIPVersion is the load balancer's IP version as the cloud
	// answers it (ipv4, ipv6).
	// +optional
	AddressIPVersion string `json:"addressIPVersion,omitempty"`
	// IPv6Mode of an IPv6 load balancer as the cloud answers it:
	// IPv6Nat64 (an IPv6 VIP forwarding to IPv4 targets) or IPv6FullChain
	// (to IPv6 targets: the Pods' IPv6 addresses).
	// +optional
	IPv6Mode string `json:"ipv6Mode,omitempty"`
	// Free slots on this load balancer.
	Free int64 `json:"free"`
	// Listeners maps "PROTOCOL/port" to the listener id.
	Listeners map[string]string `json:"listeners,omitempty"`
	// Adopted maps "PROTOCOL/port" to the listeners of Listeners that
	// tke-extend-network-controller made for a Pod and the pool took over
	// (docs/migrate-tke-extend.md): the pool's own from then on, under
	// tke-extend's name.
	// +optional
	Adopted map[string]string `json:"adopted,omitempty"`
	// TKEListeners are listeners tke-extend-network-controller made on
	// slots of the pool that the pool has not taken over (yet), with their
	// targets: in a dry run of the switch, or in a GameServerSet's pool. A
	// Pod whose clb-port-mapping-result names one, and whose address is
	// its only target, keeps it. Only pools of tke-port-pools look for
	// them.
	// +optional
	TKEListeners []TKEListener `json:"tkeListeners,omitempty"`
	// Inherited are listeners of Adopted with targets that no binding of
	// the pool records, with all their targets: those tke-extend
	// registered for a Pod that has not kept (or did not keep) its
	// address. Their slots take no binding while those targets remain;
	// the pool deregisters a target once no Pod of the cluster has its
	// IP.
	// +optional
	Inherited []TKEListener `json:"inherited,omitempty"`
}

// A TKEListener is a listener tke-extend-network-controller made for a
// Pod, on a slot of a pool, as the cloud shows it.
type TKEListener struct {
	// Key is "PROTOCOL/port", the slot and protocol it serves.
	Key string `json:"key"`
	// ID of the listener.
	ID string `json:"id"`
	// Targets are its backends, "ip:port".
	// +optional
	Targets []string `json:"targets,omitempty"`
}

// PortPoolObservation is the observed state of a pool.
type PortPoolObservation struct {
	// LoadBalancers of the pool, with their listeners and usage.
	LoadBalancers []PoolLoadBalancerStatus `json:"loadBalancers,omitempty"`
	// Allocated slots in the whole pool.
	Allocated int64 `json:"allocated"`
	// Free slots in the whole pool (on load balancers that are Ready and
	// not blacklisted).
	Free int64 `json:"free"`
	// Bindings counts the PodAddress bindings that use the pool.
	Bindings int64 `json:"bindings"`
	// SlotsPerLoadBalancer is how many slots (ports or segments) every load
	// balancer serves: the segments of the port range, capped by the
	// listener quota per load balancer divided by the number of protocols.
	// Slot i starts at startPort + i × segmentLength.
	// +optional
	SlotsPerLoadBalancer int64 `json:"slotsPerLoadBalancer,omitempty"`
}

// PoolConsumers say who may bind in a pool: which namespaces' Pods and
// PodAddressPolicies, and how many bindings each of them may hold.
type PoolConsumers struct {
	// Namespaces whose Pods and policies the pool serves besides its own.
	// Defaults to from: Same (its own namespace only).
	// +optional
	Namespaces NamespaceConsent `json:"namespaces,omitempty"`

	// MaxBindingsPerNamespace bounds the bindings (one per port of a Pod)
	// the Pods of one namespace, the pool's own included, may hold in the
	// pool. A Pod over it waits in NoPortAvailable. When unset, a pool
	// shared with other namespaces bounds each of them (not its own) at
	// 100; a pool serving only its namespace, and the pools of
	// tke-extend's CLBPortPools, are unlimited.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxBindingsPerNamespace *int64 `json:"maxBindingsPerNamespace,omitempty"`
}

// A PortPoolSpec defines the desired state of a PortPool.
type PortPoolSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              PortPoolParameters `json:"forProvider"`

	// Consumers say which namespaces may bind in the pool: a consent of
	// the pool's owner, not a cloud parameter. Without it the pool serves
	// its own namespace only.
	// +optional
	Consumers *PoolConsumers `json:"consumers,omitempty"`
}

// A PortPoolStatus represents the observed state of a PortPool.
type PortPoolStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 PortPoolObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A PortPool is a range of public ports over a set of load balancers whose
// listeners are created ahead of time, so that giving a Pod an address is
// only a target registration. Pods use it through PodAddress bindings.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="START",type="integer",JSONPath=".spec.forProvider.startPort"
// +kubebuilder:printcolumn:name="END",type="integer",JSONPath=".spec.forProvider.endPort"
// +kubebuilder:printcolumn:name="ALLOCATED",type="integer",JSONPath=".status.atProvider.allocated"
// +kubebuilder:printcolumn:name="FREE",type="integer",JSONPath=".status.atProvider.free"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,tencentcloud}
type PortPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PortPoolSpec   `json:"spec"`
	Status PortPoolStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PortPoolList contains a list of PortPool.
type PortPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PortPool `json:"items"`
}
