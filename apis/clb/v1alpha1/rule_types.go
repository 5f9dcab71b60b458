package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// RuleParameters are the configurable fields of a layer-7 forwarding rule.
// +kubebuilder:validation:XValidation:rule="has(self.region) == has(oldSelf.region)",message="region cannot be set or unset after creation"
type RuleParameters struct {
	// Region of the cloud resource, e.g. ap-shanghai; the provider
	// config's region when unset. Set it on every resource of a load
	// balancer in another region: references do not carry it.
	// +kubebuilder:validation:Pattern=`^[a-z]+-[a-z0-9-]+$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="region is immutable"
	// +optional
	Region *string `json:"region,omitempty"`

	// LoadBalancerID is the load balancer (lb-…) of the rule's listener.
	// +crossplane:generate:reference:type=LoadBalancer
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="loadBalancerId is immutable; create a new Rule"
	// +optional
	LoadBalancerID *string `json:"loadBalancerId,omitempty"`

	// LoadBalancerIDRef references a LoadBalancer to fill loadBalancerId.
	// +optional
	LoadBalancerIDRef *xpv2.NamespacedReference `json:"loadBalancerIdRef,omitempty"`

	// LoadBalancerIDSelector selects a LoadBalancer to fill loadBalancerId.
	// +optional
	LoadBalancerIDSelector *xpv2.NamespacedSelector `json:"loadBalancerIdSelector,omitempty"`

	// ListenerID is the HTTP or HTTPS listener (lbl-…) of the rule.
	// +crossplane:generate:reference:type=Listener
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="listenerId is immutable; create a new Rule"
	// +optional
	ListenerID *string `json:"listenerId,omitempty"`

	// ListenerIDRef references a Listener to fill listenerId.
	// +optional
	ListenerIDRef *xpv2.NamespacedReference `json:"listenerIdRef,omitempty"`

	// ListenerIDSelector selects a Listener to fill listenerId.
	// +optional
	ListenerIDSelector *xpv2.NamespacedSelector `json:"listenerIdSelector,omitempty"`

	// Domain the rule matches, e.g. www.example.com or *.example.com.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=80
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="domain is immutable; create a new Rule"
	Domain string `json:"domain"`

	// URL path the rule matches, e.g. / or /api.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	URL string `json:"url"`

	// Scheduler is WRR, LEAST_CONN or IP_HASH.
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

	// HealthCheck of the rule's targets.
	// +optional
	HealthCheck *HealthCheck `json:"healthCheck,omitempty"`

	// ForwardType is the protocol towards targets: HTTP, HTTPS or GRPC.
	// +kubebuilder:validation:Enum=HTTP;HTTPS;GRPC
	// +optional
	ForwardType *string `json:"forwardType,omitempty"`
}

// RuleObservation is the observed state of a rule.
type RuleObservation struct {
	// ID is the rule (location) id, loc-….
	ID string `json:"id,omitempty"`
	// LoadBalancerID of the rule.
	LoadBalancerID string `json:"loadBalancerId,omitempty"`
	// ListenerID of the rule.
	ListenerID string `json:"listenerId,omitempty"`
	// Protocol of the listener, HTTP or HTTPS.
	Protocol string `json:"protocol,omitempty"`
	// Task is the last asynchronous task the provider started.
	Task TaskStatus `json:"task,omitempty"`
}

// A RuleSpec defines the desired state of a Rule.
type RuleSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              RuleParameters `json:"forProvider"`
}

// A RuleStatus represents the observed state of a Rule.
type RuleStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 RuleObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A Rule is a layer-7 forwarding rule (domain + URL) of an HTTP or HTTPS
// listener. Its external name is the rule's location id (loc-…).
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="DOMAIN",type="string",JSONPath=".spec.forProvider.domain"
// +kubebuilder:printcolumn:name="URL",type="string",JSONPath=".spec.forProvider.url"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,tencentcloud}
type Rule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RuleSpec   `json:"spec"`
	Status RuleStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// RuleList contains a list of Rule.
type RuleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Rule `json:"items"`
}
