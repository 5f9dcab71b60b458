package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

// AddressAssociation is what an EIP is bound to: a private IP of an
// elastic network interface (e.g. a Pod's IP under VPC-CNI), or the
// primary IP of a CVM instance.
// +kubebuilder:validation:XValidation:rule="!(has(self.instanceId) && (has(self.networkInterfaceId) || has(self.privateIpAddress)))",message="set either instanceId, or privateIpAddress (and optionally networkInterfaceId), not both"
// +kubebuilder:validation:XValidation:rule="has(self.instanceId) || has(self.privateIpAddress)",message="set instanceId or privateIpAddress"
type AddressAssociation struct {
	// NetworkInterfaceID is the ENI, eni-…, that holds privateIpAddress.
	// When unset the provider finds the ENI holding privateIpAddress.
	// +kubebuilder:validation:XValidation:rule="self.matches('^eni-[a-z0-9]+$')",message="networkInterfaceId is an ENI id, eni-…"
	// +optional
	NetworkInterfaceID *string `json:"networkInterfaceId,omitempty"`

	// PrivateIPAddress is the private IP to bind to.
	// +kubebuilder:validation:XValidation:rule="isIP(self) && ip(self).family() == 4",message="privateIpAddress is an IPv4 address"
	// +optional
	PrivateIPAddress *string `json:"privateIpAddress,omitempty"`

	// InstanceID is the CVM instance, ins-….
	// +kubebuilder:validation:XValidation:rule="self.matches('^ins-[a-z0-9]+$')",message="instanceId is a CVM instance id, ins-…"
	// +optional
	InstanceID *string `json:"instanceId,omitempty"`
}

// AddressParameters are the configurable fields of an EIP.
type AddressParameters struct {
	// Name of the EIP in the cloud (at most 128 characters). Defaults to
	// the resource's metadata.name. Changing it renames the EIP.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Name *string `json:"name,omitempty"`

	// ISP is the line of the address: BGP (default), CMCC, CTCC or CUCC.
	// +kubebuilder:validation:Enum=BGP;CMCC;CTCC;CUCC
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="isp is immutable"
	// +optional
	ISP *string `json:"isp,omitempty"`

	// InternetChargeType is TRAFFIC_POSTPAID_BY_HOUR (the cloud's default
	// for standard accounts), BANDWIDTH_POSTPAID_BY_HOUR or
	// BANDWIDTH_PACKAGE.
	// +kubebuilder:validation:Enum=TRAFFIC_POSTPAID_BY_HOUR;BANDWIDTH_POSTPAID_BY_HOUR;BANDWIDTH_PACKAGE
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="internetChargeType is immutable"
	// +optional
	InternetChargeType *string `json:"internetChargeType,omitempty"`

	// Bandwidth is the outbound bandwidth cap in Mbps.
	// +kubebuilder:validation:XValidation:rule="self > 0",message="bandwidth must be at least 1 Mbps"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="bandwidth is immutable"
	// +optional
	Bandwidth *int64 `json:"bandwidth,omitempty"`

	// Tags set at allocation, at most 16: the cloud takes 20, and the
	// provider adds its owner tags (crossplane-namespace, -kind, -name and
	// -uid). The UID tag finds an EIP whose id was never saved, so it is
	// adopted instead of allocated twice; the namespace tag says which
	// namespace may act on it. Keys starting with crossplane- or
	// network.tencentcloud.m.crossplane.io/ are the provider's and refused
	// here.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('crossplane-') && !k.startsWith('network.tencentcloud.m.crossplane.io/'))",message="tag keys starting with crossplane- or network.tencentcloud.m.crossplane.io/ are the provider's own"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="tags are set at allocation and immutable"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`

	// Association binds the EIP. Changing it re-binds the EIP (unbind,
	// then bind); removing it unbinds the EIP.
	// +optional
	Association *AddressAssociation `json:"association,omitempty"`
}

// AddressObservation is the observed state of an EIP.
type AddressObservation struct {
	// AddressID is the EIP id, eip-….
	AddressID string `json:"addressId,omitempty"`
	// Name in the cloud.
	Name string `json:"name,omitempty"`
	// PublicIP is the address.
	PublicIP string `json:"publicIp,omitempty"`
	// Status is the cloud's AddressStatus: CREATING, BINDING, BIND,
	// UNBINDING, UNBIND, OFFLINING or BIND_ENI.
	Status string `json:"status,omitempty"`
	// BoundTo is what the EIP is bound to, eni-…/private IP; empty when
	// unbound.
	BoundTo string `json:"boundTo,omitempty"`
	// InstanceID is the CVM instance holding that ENI, if any.
	InstanceID string `json:"instanceId,omitempty"`
	// ISP of the address.
	ISP string `json:"isp,omitempty"`
	// Bandwidth cap in Mbps.
	Bandwidth int64 `json:"bandwidth,omitempty"`
	// InternetChargeType of the address.
	InternetChargeType string `json:"internetChargeType,omitempty"`
	// Tags as reported by the cloud.
	Tags map[string]string `json:"tags,omitempty"`
	// Task is the last asynchronous bind, unbind or release the provider
	// started.
	Task clbv1alpha1.TaskStatus `json:"task,omitempty"`
}

// An AddressSpec defines the desired state of an Address.
type AddressSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              AddressParameters `json:"forProvider,omitempty"`
}

// An AddressStatus represents the observed state of an Address.
type AddressStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 AddressObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// An Address is a Tencent Cloud elastic public IP (EIP). Its external name
// is the EIP id (eip-…); set it with an Observe-only management policy to
// import an existing EIP.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="IP",type="string",JSONPath=".status.atProvider.publicIp"
// +kubebuilder:printcolumn:name="BOUND-TO",type="string",JSONPath=".status.atProvider.boundTo"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,tencentcloud},shortName=eip
type Address struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AddressSpec   `json:"spec"`
	Status AddressStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// AddressList contains a list of Address.
type AddressList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Address `json:"items"`
}
