package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Load balancer choices of tke-extend's lbPolicy.
const (
	LBPolicyUniform = "Uniform"
	LBPolicyInOrder = "InOrder"
	LBPolicyRandom  = "Random"
)

// States of a CLBPortPool (status.state), tke-extend's names.
const (
	StatePending  = "Pending"
	StateActive   = "Active"
	StateDeleting = "Deleting"
)

// Reasons of a Pending CLBPortPool (status.reason).
const (
	ReasonWaiting = "Waiting"
	ReasonFailed  = "Failed"
)

// States of a load balancer of a CLBPortPool: tke-extend's Running and
// NotFound; the PortPool's other states are shown as the PortPool says
// them (Creating, Blacklisted, Draining, Removed).
const (
	LBStateRunning  = "Running"
	LBStateNotFound = "NotFound"
)

// CLBPortPoolSpec is tke-extend's CLBPortPool spec, field by field. The
// immutable fields are immutable there too; the cross-field rules are
// those tke-extend's admission webhook applies.
// +kubebuilder:validation:XValidation:rule="(has(self.exsistedLoadBalancerIDs) && size(self.exsistedLoadBalancerIDs) > 0) || (has(self.autoCreate) && self.autoCreate.enabled)",message="give exsistedLoadBalancerIDs or enable autoCreate"
// +kubebuilder:validation:XValidation:rule="!has(self.endPort) || self.endPort > self.startPort",message="endPort must be greater than startPort"
// +kubebuilder:validation:XValidation:rule="!has(self.endPort) || !has(self.listenerQuota)",message="endPort and listenerQuota cannot both be given"
// +kubebuilder:validation:XValidation:rule="!has(self.listenerQuota) || !has(self.autoCreate) || !self.autoCreate.enabled",message="autoCreate cannot be enabled with listenerQuota"
// +kubebuilder:validation:XValidation:rule="!has(self.segmentLength) || self.segmentLength <= 1 || (has(self.endPort) ? self.endPort : 65535) - self.startPort + 1 >= self.segmentLength",message="segmentLength is longer than the pool's ports: one segment (one port-range listener) from startPort must end by endPort, or by 65535, the last port of a listener, when endPort is unset"
type CLBPortPoolSpec struct {
	// StartPort is the first port of the pool's load balancers.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="startPort is immutable"
	StartPort int64 `json:"startPort"`

	// EndPort is the last port. Without it the pool reaches as far as
	// the listener quota allows: listenerQuota ports (segments) when
	// given, else up to 65535, capped by the cloud's listener quota.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="endPort is immutable"
	// +optional
	EndPort *int64 `json:"endPort,omitempty"`

	// ListenerQuota is the listener quota of each of the pool's load
	// balancers. Here it only sets the default endPort: the PortPool reads
	// the quota from the cloud and takes the smaller.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	ListenerQuota *int64 `json:"listenerQuota,omitempty"`

	// ListenerPrecreate chooses the protocols of the listeners: those with
	// a count above 0. Listeners are always created ahead of time here.
	// +optional
	ListenerPrecreate *ListenerPrecreateConfig `json:"listenerPrecreate,omitempty"`

	// SegmentLength gives each port a range of this many ports through one
	// port-range listener when above 1: up to 65535 (tke-extend's uint16),
	// as long as one segment fits between startPort and endPort (65535
	// when unset).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="segmentLength is immutable"
	// +optional
	SegmentLength *int64 `json:"segmentLength,omitempty"`

	// Region of the load balancers, such as ap-chengdu; the provider
	// config's region when unset.
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]+-[a-z0-9-]+$')",message="region is a Tencent Cloud region such as ap-chengdu"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="region is immutable"
	// +optional
	Region *string `json:"region,omitempty"`

	// LbPolicy picks the load balancer of a new port: Uniform (the least
	// used), InOrder or Random (the default).
	// +kubebuilder:validation:Enum=Uniform;InOrder;Random
	// +optional
	LbPolicy *string `json:"lbPolicy,omitempty"`

	// LbBlacklist lists load balancers that get no new ports.
	// +optional
	LbBlacklist []string `json:"lbBlacklist,omitempty"`

	// ExsistedLoadBalancerIDs are the pool's load balancers (tke-extend's
	// spelling).
	// +optional
	ExsistedLoadBalancerIDs []string `json:"exsistedLoadBalancerIDs,omitempty"`

	// AutoCreate creates load balancers when the pool runs low.
	// +optional
	AutoCreate *AutoCreateConfig `json:"autoCreate,omitempty"`
}

// AutoCreateConfig is tke-extend's autoCreate.
type AutoCreateConfig struct {
	// Enabled turns creation on.
	Enabled bool `json:"enabled"`

	// MaxLoadBalancers bounds the load balancers created; unbounded in
	// tke-extend, 100 here when unset or above.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	MaxLoadBalancers *int64 `json:"maxLoadBalancers,omitempty"`

	// Parameters of the load balancers created (CreateLoadBalancer's).
	// +optional
	Parameters *CreateLBParameters `json:"parameters,omitempty"`
}

// ListenerPrecreateConfig is tke-extend's listenerPrecreate.
type ListenerPrecreateConfig struct {
	// Enabled turns pre-creation on.
	Enabled bool `json:"enabled"`
	// TCP listeners wanted; above 0 makes the pool's listeners TCP.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	TCP *int64 `json:"tcp,omitempty"`
	// UDP listeners wanted; above 0 makes the pool's listeners UDP.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	UDP *int64 `json:"udp,omitempty"`
}

// CreateLBParameters are tke-extend's autoCreate.parameters.
type CreateLBParameters struct {
	// VipIsp is CMCC, CUCC, CTCC or BGP.
	// +kubebuilder:validation:Enum=CMCC;CUCC;CTCC;BGP
	// +optional
	VipIsp *string `json:"vipIsp,omitempty"`
	// BandwidthPackageID of the load balancers.
	// +optional
	BandwidthPackageID *string `json:"bandwidthPackageId,omitempty"`
	// AddressIPVersion is IPV4, IPV6 or IPv6FullChain.
	// +kubebuilder:validation:Enum=IPV4;IPV6;IPv6FullChain;IPv4
	// +optional
	AddressIPVersion *string `json:"addressIPVersion,omitempty"`
	// LoadBalancerPassToTarget lets CLB traffic through the targets'
	// security groups.
	// +optional
	LoadBalancerPassToTarget *bool `json:"loadBalancerPassToTarget,omitempty"`
	// DynamicVip asks for a domain-name load balancer; not supported here.
	// +optional
	DynamicVip *bool `json:"dynamicVip,omitempty"`
	// VpcID of the load balancers.
	// +optional
	VpcID *string `json:"vpcId,omitempty"`
	// Vip asks for a given VIP; not supported here.
	// +optional
	Vip *string `json:"vip,omitempty"`
	// Tags of the load balancers.
	// +kubebuilder:validation:MaxItems=20
	// +optional
	Tags []TagInfo `json:"tags,omitempty"`
	// ProjectID of the load balancers.
	// +optional
	ProjectID *int64 `json:"projectId,omitempty"`
	// LoadBalancerName of the load balancers.
	// +optional
	LoadBalancerName *string `json:"loadBalancerName,omitempty"`
	// LoadBalancerType is OPEN or INTERNAL.
	// +kubebuilder:validation:Enum=OPEN;INTERNAL
	// +optional
	LoadBalancerType *string `json:"loadBalancerType,omitempty"`
	// MasterZoneID of the load balancers.
	// +optional
	MasterZoneID *string `json:"masterZoneId,omitempty"`
	// ZoneID of the load balancers; not supported here.
	// +optional
	ZoneID *string `json:"zoneId,omitempty"`
	// SubnetID of INTERNAL load balancers.
	// +optional
	SubnetID *string `json:"subnetId,omitempty"`
	// SlaType of performance load balancers.
	// +kubebuilder:validation:Enum=clb.c2.medium;clb.c3.small;clb.c3.medium;clb.c4.small;clb.c4.medium;clb.c4.large;clb.c4.xlarge
	// +optional
	SlaType *string `json:"slaType,omitempty"`
	// LBChargeType is POSTPAID_BY_HOUR or PREPAID; only POSTPAID_BY_HOUR
	// is supported here.
	// +kubebuilder:validation:Enum=POSTPAID_BY_HOUR;PREPAID
	// +optional
	LBChargeType *string `json:"lbChargeType,omitempty"`
	// InternetAccessible is the network billing of OPEN load balancers.
	// +optional
	InternetAccessible *InternetAccessible `json:"internetAccessible,omitempty"`
}

// TagInfo is one tag.
type TagInfo struct {
	// TagKey of the tag. Keys starting with crossplane- or
	// network.tencentcloud.m.crossplane.io/ are the provider's own.
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('crossplane-') && !self.startsWith('network.tencentcloud.m.crossplane.io/')",message="tag keys starting with crossplane- or network.tencentcloud.m.crossplane.io/ are the provider's own"
	TagKey string `json:"tagKey"`
	// TagValue of the tag.
	TagValue string `json:"tagValue"`
}

// InternetAccessible is tke-extend's network billing.
type InternetAccessible struct {
	// InternetChargeType of the load balancers.
	// +kubebuilder:validation:Enum=TRAFFIC_POSTPAID_BY_HOUR;BANDWIDTH_POSTPAID_BY_HOUR;BANDWIDTH_PACKAGE;BANDWIDTH_PREPAID
	// +optional
	InternetChargeType *string `json:"internetChargeType,omitempty"`
	// InternetMaxBandwidthOut in Mbps.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	InternetMaxBandwidthOut *int64 `json:"internetMaxBandwidthOut,omitempty"`
	// BandwidthpkgSubType is SINGLEISP or BGP; not supported here.
	// +kubebuilder:validation:Enum=SINGLEISP;BGP
	// +optional
	BandwidthpkgSubType *string `json:"bandwidthpkgSubType,omitempty"`
}

// CLBPortPoolStatus is what the pool's PortPool says, with tke-extend's
// field names where they exist.
type CLBPortPoolStatus struct {
	// State is Pending (the PortPool is not Ready yet, or cannot be made),
	// Active (it is Ready) or Deleting.
	// +optional
	State string `json:"state,omitempty"`
	// Message says why the pool is not Active.
	// +optional
	Message *string `json:"message,omitempty"`
	// Reason of a Pending pool: Waiting (for its PortPool to be Ready) or
	// Failed (it cannot be made, or its PortPool reports an error).
	// +optional
	Reason string `json:"reason,omitempty"`
	// Quota is how many listeners the pool keeps on each load balancer:
	// its ports (or segments) per load balancer times its protocols.
	// +optional
	Quota int64 `json:"quota,omitempty"`
	// LoadbalancerStatuses are the PortPool's load balancers.
	// +optional
	LoadbalancerStatuses []LoadBalancerStatus `json:"loadbalancerStatuses,omitempty"`
	// PortPool is the PortPool serving this pool, namespace/name.
	// +optional
	PortPool string `json:"portPool,omitempty"`
	// Ignored lists the fields of the spec that are not honoured, each
	// with the reason.
	// +optional
	Ignored []string `json:"ignored,omitempty"`
	// ObservedGeneration is the generation the status is about.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// LoadBalancerStatus is one load balancer of the pool.
type LoadBalancerStatus struct {
	// AutoCreated is true for load balancers the pool created.
	// +optional
	AutoCreated *bool `json:"autoCreated,omitempty"`
	// State is Running, NotFound, or the PortPool's state (Creating,
	// Blacklisted, Draining, Removed).
	State string `json:"state"`
	// LoadbalancerID is lb-….
	LoadbalancerID string `json:"loadbalancerID"`
	// LoadbalancerName in the cloud.
	// +optional
	LoadbalancerName string `json:"loadbalancerName,omitempty"`
	// Ips are the VIPs.
	// +optional
	Ips []string `json:"ips,omitempty"`
	// Hostname of a domain-name load balancer.
	// +optional
	Hostname *string `json:"hostname,omitempty"`
	// Allocated listeners the Pods' bindings use on this load balancer,
	// as tke-extend counts them: one per port or segment and protocol
	// (TCPUDP two).
	Allocated int64 `json:"allocated"`
	// AddressIPVersion of the load balancer as the cloud answers it
	// (ipv4, ipv6); omitted while unknown.
	// +optional
	AddressIPVersion *string `json:"addressIPVersion,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cpp
// +kubebuilder:printcolumn:name="STATE",type="string",JSONPath=".status.state"
// +kubebuilder:printcolumn:name="PORTPOOL",type="string",JSONPath=".status.portPool"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"

// A CLBPortPool is tke-extend-network-controller v2's port pool, served
// here: the provider makes the PortPool tke-port-pools/<name> from it,
// serving Pods of every namespace, and shows that PortPool's state.
type CLBPortPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CLBPortPoolSpec   `json:"spec,omitempty"`
	Status CLBPortPoolStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CLBPortPoolList contains a list of CLBPortPool.
type CLBPortPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CLBPortPool `json:"items"`
}
