package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// GrantNamespaces says which namespaces an EIPGrant covers: those it names
// and those its selector matches. Nothing is covered unless it says so; an
// empty selector ({}) covers every namespace.
type GrantNamespaces struct {
	// Names of the namespaces covered.
	// +optional
	// +listType=set
	Names []string `json:"names,omitempty"`
	// Selector of the namespaces covered, by their labels.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// EIPGrantSpec is what an admin lets the Pods of some namespaces spend on
// EIPs: the account, the limits of each EIP, and how many at once.
// +kubebuilder:validation:XValidation:rule="!has(self.maxWarm) || self.maxWarm <= self.maxEIPs",message="maxWarm cannot exceed maxEIPs"
type EIPGrantSpec struct {
	// ProviderConfigRef is the account and region the EIPs are allocated
	// in: a ClusterProviderConfig, or kind ProviderConfig for the
	// ProviderConfig of that name in the Pod's own namespace.
	// +kubebuilder:validation:XValidation:rule="self.kind in ['ClusterProviderConfig', 'ProviderConfig']",message="kind is ClusterProviderConfig or ProviderConfig"
	ProviderConfigRef xpv2.ProviderConfigReference `json:"providerConfigRef"`

	// Namespaces covered by the grant.
	Namespaces GrantNamespaces `json:"namespaces"`

	// MaxBandwidth is the highest outbound bandwidth cap (Mbps) an EIP of
	// the grant may ask for.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MaxBandwidth int64 `json:"maxBandwidth"`

	// ChargeTypes an EIP of the grant may be billed by; default
	// [TRAFFIC_POSTPAID_BY_HOUR].
	// +optional
	// +listType=set
	// +kubebuilder:validation:items:Enum=TRAFFIC_POSTPAID_BY_HOUR;BANDWIDTH_POSTPAID_BY_HOUR;BANDWIDTH_PACKAGE
	ChargeTypes []string `json:"chargeTypes,omitempty"`

	// ISPs an EIP of the grant may use; default [BGP].
	// +optional
	// +listType=set
	// +kubebuilder:validation:items:Enum=BGP;CMCC;CTCC;CUCC
	ISPs []string `json:"isps,omitempty"`

	// ReleasePolicies an EIP of the grant may ask for; default
	// [AfterKeepDuration]. Never keeps (and bills) a gone Pod's EIP until
	// its PodAddress is deleted.
	// +optional
	// +listType=set
	// +kubebuilder:validation:items:Enum=AfterKeepDuration;Never
	ReleasePolicies []string `json:"releasePolicies,omitempty"`

	// MaxEIPs bounds the EIPs of the grant at once: those PodAddresses
	// hold (allocating, bound or held for a gone Pod) and the warm ones.
	// +kubebuilder:validation:Minimum=0
	MaxEIPs int32 `json:"maxEIPs"`

	// MaxWarm bounds the warm EIPs (eipWarm of PodAddressPolicies) of the
	// grant, all policies together; default 0, none.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxWarm *int32 `json:"maxWarm,omitempty"`
}

// EIPGrantStatus is what a grant has handed out.
type EIPGrantStatus struct {
	xpv2.ConditionedStatus `json:",inline"`
	// EIPs counts the PodAddresses that hold an EIP of the grant.
	EIPs int32 `json:"eips"`
	// Warm counts the warm EIPs of the grant's policies.
	Warm int32 `json:"warm"`
}

// +kubebuilder:object:root=true

// An EIPGrant lets the Pods of some namespaces have per-Pod EIPs, by
// annotation or PodAddressPolicy, within its limits and through the
// account it names. Without a grant covering its namespace, no Pod gets
// an EIP. Cluster-scoped: only those who may create cluster-wide objects
// (admins) can grant cloud spend.
// +kubebuilder:printcolumn:name="CONFIG",type="string",JSONPath=".spec.providerConfigRef.name"
// +kubebuilder:printcolumn:name="MAX-MBPS",type="integer",JSONPath=".spec.maxBandwidth"
// +kubebuilder:printcolumn:name="EIPS",type="integer",JSONPath=".status.eips"
// +kubebuilder:printcolumn:name="WARM",type="integer",JSONPath=".status.warm"
// +kubebuilder:printcolumn:name="MAX",type="integer",JSONPath=".spec.maxEIPs"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories={crossplane,tencentcloud}
type EIPGrant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EIPGrantSpec   `json:"spec"`
	Status EIPGrantStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// EIPGrantList contains a list of EIPGrant.
type EIPGrantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EIPGrant `json:"items"`
}
