package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// A Target is one backend: an ENI IP (a Pod or any VPC address) or a CVM
// instance, a port and a weight.
// +kubebuilder:validation:XValidation:rule="(size(self.ip) > 0) != (size(self.instanceId) > 0)",message="set exactly one of ip and instanceId"
type Target struct {
	// IP of an elastic network interface (ENI), e.g. a Pod IP with VPC-CNI.
	// +kubebuilder:default=""
	// +optional
	IP string `json:"ip"`

	// InstanceID of a CVM instance (ins-…).
	// +kubebuilder:default=""
	// +optional
	InstanceID string `json:"instanceId"`

	// Port of the target. For a port-range listener it is the first port
	// of the target's range.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int64 `json:"port"`

	// Weight from 0 (no new traffic) to 100. Defaults to 10.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=10
	// +optional
	Weight *int64 `json:"weight,omitempty"`
}

// TargetSetParameters are the backends of one listener or one rule.
// +kubebuilder:validation:XValidation:rule="has(self.region) == has(oldSelf.region)",message="region cannot be set or unset after creation"
type TargetSetParameters struct {
	// Region of the cloud resource, e.g. ap-shanghai; the provider
	// config's region when unset. Set it on every resource of a load
	// balancer in another region: references do not carry it.
	// +kubebuilder:validation:Pattern=`^[a-z]+-[a-z0-9-]+$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="region is immutable"
	// +optional
	Region *string `json:"region,omitempty"`

	// LoadBalancerID is the load balancer (lb-…) of the listener.
	// +crossplane:generate:reference:type=LoadBalancer
	// +optional
	LoadBalancerID *string `json:"loadBalancerId,omitempty"`

	// LoadBalancerIDRef references a LoadBalancer to fill loadBalancerId.
	// +optional
	LoadBalancerIDRef *xpv2.NamespacedReference `json:"loadBalancerIdRef,omitempty"`

	// LoadBalancerIDSelector selects a LoadBalancer to fill loadBalancerId.
	// +optional
	LoadBalancerIDSelector *xpv2.NamespacedSelector `json:"loadBalancerIdSelector,omitempty"`

	// ListenerID is the listener (lbl-…) whose targets these are.
	// +crossplane:generate:reference:type=Listener
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="listenerId is immutable; create a new TargetSet"
	// +optional
	ListenerID *string `json:"listenerId,omitempty"`

	// ListenerIDRef references a Listener to fill listenerId.
	// +optional
	ListenerIDRef *xpv2.NamespacedReference `json:"listenerIdRef,omitempty"`

	// ListenerIDSelector selects a Listener to fill listenerId.
	// +optional
	ListenerIDSelector *xpv2.NamespacedSelector `json:"listenerIdSelector,omitempty"`

	// RuleID is the rule (loc-…) of an HTTP/HTTPS listener whose targets
	// these are; unset for a TCP/UDP listener.
	// +crossplane:generate:reference:type=Rule
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="ruleId is immutable; create a new TargetSet"
	// +optional
	RuleID *string `json:"ruleId,omitempty"`

	// RuleIDRef references a Rule to fill ruleId.
	// +optional
	RuleIDRef *xpv2.NamespacedReference `json:"ruleIdRef,omitempty"`

	// RuleIDSelector selects a Rule to fill ruleId.
	// +optional
	RuleIDSelector *xpv2.NamespacedSelector `json:"ruleIdSelector,omitempty"`

	// Targets are all the backends of the listener or rule: targets in the
	// cloud that are not listed here are removed. Each target is keyed by
	// ip (or instanceId) and port.
	// +listType=map
	// +listMapKey=ip
	// +listMapKey=instanceId
	// +listMapKey=port
	// +kubebuilder:validation:MaxItems=500
	// +optional
	Targets []Target `json:"targets,omitempty"`

	// Source makes the targets follow Kubernetes: Services resolved
	// through their EndpointSlices, or named Pods. The resolved targets
	// are added to those listed in targets.
	// +optional
	Source *TargetSource `json:"source,omitempty"`
}

// Backend kinds of a TargetSource: how a Pod is reached from the load
// balancer.
const (
	// BackendNodePort registers the node of each ready endpoint (its
	// instance, from the Node's providerID) with the Service's NodePort.
	BackendNodePort = "NodePort"
	// BackendPodIP registers each Pod IP with its target port (VPC-CNI,
	// an underlay network, or SNAT Pro).
	BackendPodIP = "PodIP"
	// BackendHostPort registers the node of each Pod with the hostPort
	// its container declares for the target port.
	BackendHostPort = "HostPort"
)

// A TargetSource lists what the targets follow. A Pod not Ready is kept
// out unless includeNotReady.
// +kubebuilder:validation:XValidation:rule="size(self.services) + size(self.pods) > 0",message="name at least one service or pod"
type TargetSource struct {
	// Services whose endpoints become targets.
	// +kubebuilder:default={}
	// +optional
	Services []ServiceBackend `json:"services"`

	// Pods named one by one (a StatefulSet Pod of a port mapping).
	// +kubebuilder:default={}
	// +optional
	Pods []PodBackend `json:"pods"`

	// IncludeNotReady registers Pods that are not Ready too.
	// +optional
	IncludeNotReady bool `json:"includeNotReady,omitempty"`
}

// A ServiceBackend is one port of a Service.
type ServiceBackend struct {
	// Name of the Service.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Namespace of the Service; the TargetSet's when unset.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Port of the Service: its number or its name.
	Port intstr.IntOrString `json:"port"`

	// Backend is NodePort (the default), PodIP or HostPort.
	// +kubebuilder:validation:Enum=NodePort;PodIP;HostPort
	// +kubebuilder:default=NodePort
	// +optional
	Backend string `json:"backend,omitempty"`

	// Weight of every target of this Service, 0 to 100. Defaults to 10.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Weight *int64 `json:"weight,omitempty"`

	// Subsets give the Pods whose labels match a selector their own
	// weight; the first matching subset wins, and Pods that match none
	// keep the Service's weight.
	// +optional
	Subsets []WeightedSubset `json:"subsets,omitempty"`
}

// A WeightedSubset weights the Pods whose labels include labelSelector.
type WeightedSubset struct {
	// LabelSelector is a set of labels a Pod must carry.
	// +kubebuilder:validation:MinProperties=1
	LabelSelector map[string]string `json:"labelSelector"`

	// Weight of the subset's targets, 0 to 100.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Weight int64 `json:"weight"`
}

// A PodBackend is one port of one named Pod.
type PodBackend struct {
	// Name of the Pod.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Namespace of the Pod; the TargetSet's when unset.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Port of the Pod: a container port number (PodIP) or, for HostPort,
	// the container port whose hostPort is registered.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int64 `json:"port"`

	// Backend is PodIP (the default) or HostPort.
	// +kubebuilder:validation:Enum=PodIP;HostPort
	// +kubebuilder:default=PodIP
	// +optional
	Backend string `json:"backend,omitempty"`

	// Weight of the target, 0 to 100. Defaults to 10.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Weight *int64 `json:"weight,omitempty"`
}

// TargetObservation is one target as the cloud reports it.
type TargetObservation struct {
	IP         string `json:"ip,omitempty"`
	InstanceID string `json:"instanceId,omitempty"`
	Port       int64  `json:"port"`
	Weight     int64  `json:"weight"`
	// Health is the load balancer's health check verdict: Healthy,
	// Unhealthy, or Unknown while the check has not run or is off.
	Health string `json:"health,omitempty"`
}

// TargetSetObservation is the observed state of a target set.
type TargetSetObservation struct {
	// Targets registered in the cloud.
	Targets []TargetObservation `json:"targets,omitempty"`
	// Task is the last asynchronous task the provider started.
	Task TaskStatus `json:"task,omitempty"`
}

// A TargetSetSpec defines the desired state of a TargetSet.
type TargetSetSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              TargetSetParameters `json:"forProvider"`
}

// A TargetSetStatus represents the observed state of a TargetSet.
type TargetSetStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 TargetSetObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A TargetSet is the set of backends of one listener or rule. Observe diffs
// the listed targets against the cloud's and Update registers, removes or
// re-weights only the difference. Its external name is the listener id, or
// listenerId/ruleId for a rule.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,tencentcloud}
type TargetSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TargetSetSpec   `json:"spec"`
	Status TargetSetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// TargetSetList contains a list of TargetSet.
type TargetSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TargetSet `json:"items"`
}
