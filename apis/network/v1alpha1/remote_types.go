package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// Clusters behind NAT: an agent inside a workload cluster connects out to
// the management cluster, where a WorkloadCluster and its RemotePods live
// in one namespace per workload cluster. The agent writes RemotePod specs
// (what it sees of its Pods); the provider writes RemotePod statuses (what
// the Pods are to be told). Each side owns one half, so they never race.

// DefaultDisconnectGracePeriod is how long a disconnected cluster's Pods
// keep their addresses.
const DefaultDisconnectGracePeriod = 10 * 60 // seconds

// WorkloadClusterSpec configures one workload cluster, and bounds what its
// agent may claim: the agent is trusted with nothing the admin did not
// declare here.
// +kubebuilder:validation:XValidation:rule="!has(self.agentTokenLifetime) || (duration(self.agentTokenLifetime) >= duration('10m') && duration(self.agentTokenLifetime) <= duration('24h'))",message="agentTokenLifetime must be between 10m and 24h"
type WorkloadClusterSpec struct {
	// PodCIDRs are the Pod networks of the cluster. A RemotePod whose Pod
	// IPs are not all inside one of them is refused: no address, nothing
	// registered in the cloud.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:items:XValidation:rule="isCIDR(self) && cidr(self) == cidr(self).masked()",message="every podCIDR must be a network such as 10.244.0.0/16, without host bits"
	// +listType=set
	PodCIDRs []string `json:"podCIDRs"`

	// NodeCIDRs are the networks of the cluster's nodes. A RemotePod whose
	// node InternalIP is outside them is refused.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:items:XValidation:rule="isCIDR(self) && cidr(self) == cidr(self).masked()",message="every nodeCIDR must be a network such as 10.0.0.0/24, without host bits"
	// +listType=set
	NodeCIDRs []string `json:"nodeCIDRs"`

	// Pools, when set, are the only PortPools the cluster's Pods may use
	// (a pool's namespace defaults to the cluster's). A Pod asking for
	// another is refused. This restricts further what the pools' own
	// consent allows; it grants nothing.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Pools []PoolRef `json:"pools,omitempty"`

	// AgentTokenLifetime is the life of the tokens the provider mints for
	// the agent and hands over in the Secret <name>-agent-token; the agent
	// cannot mint its own. Between 10m and 24h; defaults to 1h.
	// +optional
	AgentTokenLifetime *metav1.Duration `json:"agentTokenLifetime,omitempty"`

	// Suspend revokes the agent's access: the provider deletes the agent's
	// and bootstrap ServiceAccounts (their tokens stop working at once),
	// Roles, RoleBindings and token Secret, and the cluster's RemotePods,
	// which releases their addresses. Setting it back to false recreates
	// the identities; the agent then needs a new bootstrap token.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// DisconnectGracePeriod is how long the Pods of a cluster whose agent
	// stopped its heartbeat keep their addresses; then their RemotePods
	// are deleted and the addresses released. Defaults to 10m.
	// +optional
	DisconnectGracePeriod *metav1.Duration `json:"disconnectGracePeriod,omitempty"`
}

// WorkloadClusterStatus is what the management cluster knows of one
// workload cluster.
type WorkloadClusterStatus struct {
	xpv2.ConditionedStatus `json:",inline"`

	// Connected is true while the agent's heartbeat is recent.
	Connected bool `json:"connected,omitempty"`

	// LastHeartbeat is the agent's last renewal of its Lease.
	// +optional
	LastHeartbeat *metav1.Time `json:"lastHeartbeat,omitempty"`

	// RegisteredAt is when the agent first registered.
	// +optional
	RegisteredAt *metav1.Time `json:"registeredAt,omitempty"`

	// AgentIdentity is the user the agent acts as after registration.
	// +optional
	AgentIdentity string `json:"agentIdentity,omitempty"`

	// PodsServed counts the cluster's RemotePods whose addresses are
	// bound.
	PodsServed int32 `json:"podsServed,omitempty"`

	// Pods counts the cluster's RemotePods.
	Pods int32 `json:"pods,omitempty"`
}

// A WorkloadCluster is a Kubernetes cluster whose Pods get addresses from
// this management cluster through an agent that connects out. Its
// namespace holds its RemotePods and nothing of another cluster.
// +kubebuilder:object:root=true
// +kubebuilder:printcolumn:name="CONNECTED",type="boolean",JSONPath=".status.connected"
// +kubebuilder:printcolumn:name="PODS",type="integer",JSONPath=".status.pods"
// +kubebuilder:printcolumn:name="SERVED",type="integer",JSONPath=".status.podsServed"
// +kubebuilder:printcolumn:name="HEARTBEAT",type="date",JSONPath=".status.lastHeartbeat"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={tencentcloud}
type WorkloadCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkloadClusterSpec   `json:"spec,omitempty"`
	Status WorkloadClusterStatus `json:"status,omitempty"`
}

// WorkloadClusterList contains a list of WorkloadCluster.
// +kubebuilder:object:root=true
type WorkloadClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadCluster `json:"items"`
}

// RemotePodSpec is what the agent sees of one Pod of its cluster: the
// fields the address controllers read of a Pod, and nothing else.
type RemotePodSpec struct {
	// Cluster is the WorkloadCluster (in this namespace) the Pod runs in.
	// +kubebuilder:validation:MinLength=1
	Cluster string `json:"cluster"`

	// PodNamespace, PodName and PodUID name the Pod in its cluster.
	PodNamespace string `json:"podNamespace"`
	PodName      string `json:"podName"`
	PodUID       string `json:"podUID"`

	// Labels of the Pod (policies select on them).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations of the Pod that ask for addresses (ours, bcs's, TKE's).
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Owner is the Pod's controller (a StatefulSet's Pods get ordinal
	// ports).
	// +optional
	Owner *RemoteOwner `json:"owner,omitempty"`

	// Containers with their ports.
	// +optional
	Containers []RemoteContainer `json:"containers,omitempty"`

	// ReadinessGates of the Pod, by condition type.
	// +optional
	ReadinessGates []string `json:"readinessGates,omitempty"`

	// Node the Pod runs on.
	// +optional
	Node *RemoteNode `json:"node,omitempty"`

	// PodIP and PodIPs of the Pod, once it has them.
	// +optional
	PodIP string `json:"podIP,omitempty"`
	// +optional
	PodIPs []string `json:"podIPs,omitempty"`

	// Ready is the Pod's Ready condition.
	// +optional
	Ready bool `json:"ready,omitempty"`

	// Deleting is true once the Pod has a deletion timestamp.
	// +optional
	Deleting bool `json:"deleting,omitempty"`
}

// RemoteOwner is a Pod's controlling owner.
type RemoteOwner struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// RemoteContainer is a container's name and ports.
type RemoteContainer struct {
	Name string `json:"name"`
	// +optional
	Ports []corev1.ContainerPort `json:"ports,omitempty"`
}

// RemoteNode is what the backends need of a node.
type RemoteNode struct {
	Name string `json:"name"`
	// InstanceID of the node's CVM, from its providerID.
	// +optional
	InstanceID string `json:"instanceId,omitempty"`
	// InternalIP of the node.
	// +optional
	InternalIP string `json:"internalIP,omitempty"`
}

// RemotePodStatus is what the provider tells the Pod; the agent applies it
// to the Pod in its cluster.
type RemotePodStatus struct {
	// Annotations to set on the Pod (the address and status annotations).
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// RemoveAnnotations are keys to remove from the Pod.
	// +optional
	RemoveAnnotations []string `json:"removeAnnotations,omitempty"`

	// Conditions to set on the Pod (the address readiness conditions), and
	// Healthy and Synced, the RemotePod's own health, which the agent
	// leaves off the Pod.
	// +optional
	Conditions []corev1.PodCondition `json:"conditions,omitempty"`

	// Warning is the last Warning the provider has for the Pod, for the
	// agent to record as an Event in the Pod's cluster. It is kept while
	// the Pod's request cannot be served as things stand (invalid, no
	// free port, no pool) and cleared once it can.
	// +optional
	Warning *RemoteEvent `json:"warning,omitempty"`
}

// RemoteEvent is an Event to record on the Pod.
type RemoteEvent struct {
	Reason  string      `json:"reason"`
	Message string      `json:"message"`
	Time    metav1.Time `json:"time"`
}

// A RemotePod mirrors a Pod of a workload cluster that asks for an address.
// It is named <pod namespace>.<pod name>; its PodAddress has the same name.
// +kubebuilder:object:root=true
// +kubebuilder:printcolumn:name="CLUSTER",type="string",JSONPath=".spec.cluster"
// +kubebuilder:printcolumn:name="POD-IP",type="string",JSONPath=".spec.podIP"
// +kubebuilder:printcolumn:name="READY",type="boolean",JSONPath=".spec.ready"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={tencentcloud}
type RemotePod struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RemotePodSpec   `json:"spec"`
	Status RemotePodStatus `json:"status,omitempty"`
}

// RemotePodList contains a list of RemotePod.
// +kubebuilder:object:root=true
type RemotePodList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RemotePod `json:"items"`
}
