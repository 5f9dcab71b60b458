package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// PodAddressPolicySpec says which Pods of the namespace get public
// addresses, for which ports and from which pools, or an EIP each.
// +kubebuilder:validation:XValidation:rule="has(self.eip) != (has(self.ports) && size(self.ports) > 0)",message="ask for ports or for an eip, exactly one of them"
// +kubebuilder:validation:XValidation:rule="!has(self.eipWarm) || self.eipWarm == 0 || has(self.eip)",message="eipWarm needs eip"
type PodAddressPolicySpec struct {
	// Selector of the Pods.
	Selector metav1.LabelSelector `json:"selector"`

	// Ports to expose. Empty when the policy gives each Pod an EIP.
	// +optional
	Ports []PortRequest `json:"ports,omitempty"`

	// EIP gives each selected Pod one elastic public IP bound to its IP.
	// +optional
	EIP *EIPRequest `json:"eip,omitempty"`

	// EIPWarm keeps this many unbound EIPs with the attributes of eip
	// allocated ahead, so that a burst of Pods takes them instead of
	// allocating (and counting against the daily allocation limit). Each
	// idle EIP is billed by the hour while it waits.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	EIPWarm *int32 `json:"eipWarm,omitempty"`

	// Strategy is Dynamic (default) or Ordinal.
	// +kubebuilder:validation:Enum=Dynamic;Ordinal
	// +optional
	Strategy string `json:"strategy,omitempty"`

	// KeepDuration keeps the ports of a deleted Pod for a new Pod of the
	// same name for this long.
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$')",message="keepDuration is a non-negative duration such as 30s, 5m or 2h45m (units ns, us, ms, s, m, h)"
	// +optional
	KeepDuration *metav1.Duration `json:"keepDuration,omitempty"`

	// Backend is PodIP (default), HostPort or NodePort.
	// +kubebuilder:validation:Enum=PodIP;HostPort;NodePort
	// +optional
	Backend string `json:"backend,omitempty"`
}

// PodAddressPolicyStatus is the observed state of a policy.
type PodAddressPolicyStatus struct {
	xpv2.ConditionedStatus `json:",inline"`
	// MatchedPods counts the live Pods this policy gives addresses to: its
	// selector matches them, they ask for nothing by annotation, and no
	// policy of an earlier name matches them.
	MatchedPods int64 `json:"matchedPods"`
	// BoundPods counts the matched Pods whose addresses all forward to
	// them (their PodAddress is Bound).
	BoundPods int64 `json:"boundPods"`
}

// Reasons of a PodAddressPolicy's Ready condition.
const (
	// ReasonAllBound: every matched Pod is Bound (also when none match).
	ReasonAllBound xpv2.ConditionReason = "AllBound"
	// ReasonBinding: some matched Pods are still being bound (allocating,
	// registering, waiting for an IP or a pool that is not Ready yet).
	ReasonBinding xpv2.ConditionReason = "Binding"
	// ReasonBindFailed: some matched Pods cannot be bound as things stand
	// (no free port, an invalid request); the message says which.
	ReasonBindFailed xpv2.ConditionReason = "BindFailed"
)

// +kubebuilder:object:root=true

// A PodAddressPolicy gives every Pod its selector matches a public address
// per listed port. Compositions create these; Pods may also ask by
// annotation.
// +kubebuilder:printcolumn:name="PODS",type="integer",JSONPath=".status.matchedPods"
// +kubebuilder:printcolumn:name="BOUND",type="integer",JSONPath=".status.boundPods"
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,tencentcloud}
type PodAddressPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodAddressPolicySpec   `json:"spec"`
	Status PodAddressPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PodAddressPolicyList contains a list of PodAddressPolicy.
type PodAddressPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodAddressPolicy `json:"items"`
}
