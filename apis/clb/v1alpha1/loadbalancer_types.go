package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// InternetAccessible is the public network billing of an OPEN load balancer.
type InternetAccessible struct {
	// InternetChargeType is TRAFFIC_POSTPAID_BY_HOUR,
	// BANDWIDTH_POSTPAID_BY_HOUR or BANDWIDTH_PACKAGE.
	// +kubebuilder:validation:Enum=TRAFFIC_POSTPAID_BY_HOUR;BANDWIDTH_POSTPAID_BY_HOUR;BANDWIDTH_PACKAGE
	// +optional
	InternetChargeType *string `json:"internetChargeType,omitempty"`

	// InternetMaxBandwidthOut is the outbound bandwidth cap in Mbps.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	InternetMaxBandwidthOut *int64 `json:"internetMaxBandwidthOut,omitempty"`
}

// LoadBalancerParameters are the configurable fields of a load balancer.
// Fields left unset take the cloud's value (late initialization).
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'INTERNAL' || has(self.subnetId)",message="an INTERNAL load balancer needs subnetId"
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'INTERNAL' || !has(self.vipIsp)",message="vipIsp applies to OPEN load balancers only"
type LoadBalancerParameters struct {
	// Region of the cloud resource, e.g. ap-shanghai; the provider
	// config's region when unset. Set it on every resource of a load
	// balancer in another region: references do not carry it.
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]+-[a-z0-9-]+$')",message="region is a Tencent Cloud region such as ap-shanghai"
	// +optional
	Region *string `json:"region,omitempty"`

	// Name of the load balancer in the cloud (at most 60 characters).
	// Defaults to the resource's metadata.name.
	// +kubebuilder:validation:MaxLength=60
	// +optional
	Name *string `json:"name,omitempty"`

	// Type is OPEN (public) or INTERNAL (VPC only). Defaults to OPEN.
	// +kubebuilder:validation:Enum=OPEN;INTERNAL
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable; create a new LoadBalancer"
	// +optional
	Type *string `json:"type,omitempty"`

	// VpcID is the VPC the load balancer serves.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="vpcId is immutable"
	// +optional
	VpcID *string `json:"vpcId,omitempty"`

	// SubnetID is the subnet of an INTERNAL load balancer's VIP.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="subnetId is immutable"
	// +optional
	SubnetID *string `json:"subnetId,omitempty"`

	// VipIsp is the ISP of an OPEN load balancer's VIP: BGP (default),
	// CMCC, CUCC or CTCC.
	// +kubebuilder:validation:Enum=BGP;CMCC;CUCC;CTCC
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="vipIsp is immutable"
	// +optional
	VipIsp *string `json:"vipIsp,omitempty"`

	// AddressIPVersion is IPV4 (default), IPV6 or IPv6FullChain.
	// +kubebuilder:validation:Enum=IPV4;IPV6;IPv6FullChain
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="addressIPVersion is immutable"
	// +optional
	AddressIPVersion *string `json:"addressIPVersion,omitempty"`

	// InternetAccessible is the public billing and bandwidth.
	// +optional
	InternetAccessible *InternetAccessible `json:"internetAccessible,omitempty"`

	// SLAType is the performance capacity specification, e.g.
	// clb.c2.medium; unset means a shared instance.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="slaType is immutable"
	// +optional
	SLAType *string `json:"slaType,omitempty"`

	// ProjectID of the load balancer; 0 is the default project.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="projectId is immutable"
	// +optional
	ProjectID *int64 `json:"projectId,omitempty"`

	// MasterZoneID pins the primary availability zone.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="masterZoneId is immutable"
	// +optional
	MasterZoneID *string `json:"masterZoneId,omitempty"`

	// BandwidthPackageID is the bandwidth package an OPEN load balancer
	// draws from.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="bandwidthPackageId is immutable"
	// +optional
	BandwidthPackageID *string `json:"bandwidthPackageId,omitempty"`

	// LoadBalancerPassToTarget lets traffic through to targets without a
	// security group check on the targets.
	// +optional
	LoadBalancerPassToTarget *bool `json:"loadBalancerPassToTarget,omitempty"`

	// Tags set at creation, at most 16: the cloud takes 20, and the
	// provider adds its owner tags (crossplane-namespace, -kind, -name and
	// -uid; a PortPool's load balancers also crossplane-portpool and
	// crossplane-portpool-uid). The UID tag finds a load balancer whose id
	// was never saved, so it is adopted instead of created twice; the
	// namespace tag says which namespace may act on it. Keys starting with
	// crossplane- or network.tencentcloud.m.crossplane.io/ are the
	// provider's and refused here.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('crossplane-') && !k.startsWith('network.tencentcloud.m.crossplane.io/'))",message="tag keys starting with crossplane- or network.tencentcloud.m.crossplane.io/ are the provider's own"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="tags are set at creation and immutable"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
}

// LoadBalancerObservation is the observed state of a load balancer.
type LoadBalancerObservation struct {
	// ID is the load balancer id, lb-….
	ID string `json:"id,omitempty"`
	// Name in the cloud.
	Name string `json:"name,omitempty"`
	// Type is OPEN or INTERNAL.
	Type string `json:"type,omitempty"`
	// VIPs are the virtual IP addresses.
	VIPs []string `json:"vips,omitempty"`
	// AddressIPv6 is the IPv6 address, if any.
	AddressIPv6 string `json:"addressIPv6,omitempty"`
	// Domain is the load balancer's domain name.
	Domain string `json:"domain,omitempty"`
	// Status is Creating or Normal.
	Status string `json:"status,omitempty"`
	// VpcID the load balancer serves.
	VpcID string `json:"vpcId,omitempty"`
	// SubnetID of an INTERNAL load balancer.
	SubnetID string `json:"subnetId,omitempty"`
	// VipIsp of an OPEN load balancer.
	VipIsp string `json:"vipIsp,omitempty"`
	// CreateTime as reported by the cloud.
	CreateTime string `json:"createTime,omitempty"`
	// Tags as reported by the cloud.
	Tags map[string]string `json:"tags,omitempty"`
	// Task is the last asynchronous task the provider started.
	Task TaskStatus `json:"task,omitempty"`
}

// A LoadBalancerSpec defines the desired state of a LoadBalancer. The
// region rule sits here, not on the parameters, because a PortPool's
// auto-create template reuses the parameters and never has a region.
// +kubebuilder:validation:XValidation:rule="has(self.forProvider) && has(self.forProvider.region) ? (has(oldSelf.forProvider) && has(oldSelf.forProvider.region) && self.forProvider.region == oldSelf.forProvider.region) : !(has(oldSelf.forProvider) && has(oldSelf.forProvider.region))",message="region is immutable: it cannot be set, changed or unset after creation"
type LoadBalancerSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              LoadBalancerParameters `json:"forProvider,omitempty"`

	// Consumers say which other namespaces may build on the load balancer
	// (Listeners, Rules, TargetSets, PortPools): a consent of its owner,
	// not a cloud parameter. Without it only its own namespace may.
	// +optional
	Consumers *LoadBalancerConsumers `json:"consumers,omitempty"`
}

// DefaultMaxListenersPerNamespace bounds the listeners another namespace
// may hold on a shared load balancer when its owner states no bound: a
// tenant must not use up the listener quota of a load balancer she was
// only let onto.
const DefaultMaxListenersPerNamespace = 10

// LoadBalancerConsumers say who may build on a load balancer besides its
// own namespace, and how much of it each may use.
type LoadBalancerConsumers struct {
	// Namespaces that may put listeners, rules, targets and pools on the
	// load balancer besides its own. Defaults to from: Same.
	// +optional
	Namespaces NamespaceConsent `json:"namespaces,omitempty"`

	// MaxListenersPerNamespace bounds the Listeners (and PortPool
	// listeners) each other namespace may hold on the load balancer.
	// Defaults to 10; the own namespace is not bounded.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxListenersPerNamespace *int64 `json:"maxListenersPerNamespace,omitempty"`
}

// NamespaceConsent is the load balancer's consent to other namespaces:
// from: Same when it says nothing.
func (lb *LoadBalancer) NamespaceConsent() NamespaceConsent {
	if lb.Spec.Consumers == nil {
		return NamespaceConsent{From: ConsentSame}
	}
	return lb.Spec.Consumers.Namespaces
}

// MaxListenersPerNamespace is the bound on another namespace's listeners.
func (lb *LoadBalancer) MaxListenersPerNamespace() int {
	if lb.Spec.Consumers == nil || lb.Spec.Consumers.MaxListenersPerNamespace == nil {
		return DefaultMaxListenersPerNamespace
	}
	return int(*lb.Spec.Consumers.MaxListenersPerNamespace)
}

// A LoadBalancerStatus represents the observed state of a LoadBalancer.
type LoadBalancerStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 LoadBalancerObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A LoadBalancer is a Tencent Cloud CLB instance. Its external name is the
// load balancer id (lb-…); set it with an Observe-only management policy to
// import an existing load balancer.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="VIP",type="string",JSONPath=".status.atProvider.vips[0]"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,tencentcloud},shortName=clb
type LoadBalancer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LoadBalancerSpec   `json:"spec"`
	Status LoadBalancerStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// LoadBalancerList contains a list of LoadBalancer.
type LoadBalancerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LoadBalancer `json:"items"`
}
