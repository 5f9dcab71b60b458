package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// NetPool states (NetPoolStatus.Status).
const (
	// NetPoolInitializing: the pool's NetIPs are being created.
	NetPoolInitializing = "Initializing"
	// NetPoolNormal: every listed IP has its NetIP.
	NetPoolNormal = "Normal"
	// NetPoolTerminating: the pool is being deleted; it waits while any of
	// its IPs is Active.
	NetPoolTerminating = "Terminating"
)

// NetIP states (NetIPStatus.Status).
const (
	// NetIPAvailable: free to allocate.
	NetIPAvailable = "Available"
	// NetIPActive: a container holds it.
	NetIPActive = "Active"
	// NetIPReserved: a fixed IP whose container was released; kept for its
	// Pod or claim until FixedIPExpiredTime.
	NetIPReserved = "Reserved"
)

// NetIPClaim phases.
const (
	// ClaimPending: no IP bound yet.
	ClaimPending = "Pending"
	// ClaimBound: Status.BoundedIP is this claim's.
	ClaimBound = "Bound"
	// ClaimExpired: the bound IP was released after expiredDuration.
	ClaimExpired = "Expired"
)

// NetPoolSpec is a subnet and the IPs of it that containers on its hosts
// may get. Net, mask and gateway are copied onto every NetIP, so they
// cannot change; hosts and availableIPs can.
//
// The CIDR rules run in the API server, so a bad pool is refused at apply.
// They spell the mask by indexing a list of strings: string(self.mask)
// has no size bound for CEL's cost estimate, which then refuses the rule.
// +kubebuilder:validation:XValidation:rule="!isIP(self.net) || cidr(self.net + '/' + ['0','1','2','3','4','5','6','7','8','9','10','11','12','13','14','15','16','17','18','19','20','21','22','23','24','25','26','27','28','29','30','31','32'][self.mask]).masked() == cidr(self.net + '/' + ['0','1','2','3','4','5','6','7','8','9','10','11','12','13','14','15','16','17','18','19','20','21','22','23','24','25','26','27','28','29','30','31','32'][self.mask])",message="net must be the first address of its subnet: no host bits set below mask"
// +kubebuilder:validation:XValidation:rule="!isIP(self.net) || !isIP(self.gateway) || cidr(self.net + '/' + ['0','1','2','3','4','5','6','7','8','9','10','11','12','13','14','15','16','17','18','19','20','21','22','23','24','25','26','27','28','29','30','31','32'][self.mask]).containsIP(self.gateway)",message="gateway must be inside net/mask"
// +kubebuilder:validation:XValidation:rule="!has(self.availableIPs) || !isIP(self.net) || self.availableIPs.all(i, !isIP(i) || cidr(self.net + '/' + ['0','1','2','3','4','5','6','7','8','9','10','11','12','13','14','15','16','17','18','19','20','21','22','23','24','25','26','27','28','29','30','31','32'][self.mask]).containsIP(i))",message="every availableIP must be inside net/mask"
// +kubebuilder:validation:XValidation:rule="!has(self.availableIPs) || !self.availableIPs.exists(i, i == self.gateway)",message="the gateway cannot be an availableIP"
type NetPoolSpec struct {
	// Net is the subnet's IPv4 network address.
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:XValidation:rule="isIP(self) && ip(self).family() == 4",message="net must be an IPv4 address"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="net is immutable"
	Net string `json:"net"`

	// Mask is the prefix length of the subnet.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="mask is immutable"
	Mask int `json:"mask"`

	// Gateway of the subnet.
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:XValidation:rule="isIP(self) && ip(self).family() == 4",message="gateway must be an IPv4 address"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="gateway is immutable"
	Gateway string `json:"gateway"`

	// Hosts whose containers allocate from this pool, by IP.
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:MaxLength=39
	// +kubebuilder:validation:items:XValidation:rule="isIP(self)",message="every host must be an IP address"
	// +listType=set
	// +optional
	Hosts []string `json:"hosts,omitempty"`

	// AvailableIPs are the IPs of the subnet containers may get; one NetIP
	// named after each is created. An IP removed while Active stays until
	// its container is released.
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:MaxLength=15
	// +kubebuilder:validation:items:XValidation:rule="isIP(self) && ip(self).family() == 4",message="every availableIP must be an IPv4 address"
	// +listType=set
	// +optional
	AvailableIPs []string `json:"availableIPs,omitempty"`
}

// NetPoolStatus is the pool's state and its IPs' counts.
type NetPoolStatus struct {
	xpv2.ConditionedStatus `json:",inline"`
	// Status is Initializing, Normal or Terminating.
	// +optional
	Status string `json:"status,omitempty"`
	// UpdateTime is when the status last changed (RFC 3339).
	// +optional
	UpdateTime string `json:"updateTime,omitempty"`
	// Total counts the pool's NetIPs, including removed IPs still Active.
	Total int `json:"total"`
	// Available counts the NetIPs that can be allocated.
	Available int `json:"available"`
	// Active counts the NetIPs held by containers.
	Active int `json:"active"`
	// Reserved counts the fixed NetIPs kept for their Pod or claim.
	Reserved int `json:"reserved"`
}

// Reasons of a NetPool's Ready condition.
const (
	// ReasonPoolSynced: every listed IP has its NetIP.
	ReasonPoolSynced xpv2.ConditionReason = "Synced"
	// ReasonIPConflict: a listed IP's NetIP belongs to another pool.
	ReasonIPConflict xpv2.ConditionReason = "IPConflict"
	// ReasonDeletionBlocked: the pool is being deleted but IPs are still
	// Active; the message names them.
	ReasonDeletionBlocked xpv2.ConditionReason = "DeletionBlocked"
)

// +kubebuilder:object:root=true

// A NetPool is a subnet whose listed IPs containers on its hosts get
// through the allocator HTTP API (the CNI's IPAM). It replaces bcs
// BCSNetPool.
// +kubebuilder:printcolumn:name="NET",type="string",JSONPath=".spec.net"
// +kubebuilder:printcolumn:name="MASK",type="integer",JSONPath=".spec.mask"
// +kubebuilder:printcolumn:name="GATEWAY",type="string",JSONPath=".spec.gateway"
// +kubebuilder:printcolumn:name="STATUS",type="string",JSONPath=".status.status"
// +kubebuilder:printcolumn:name="AVAILABLE",type="integer",JSONPath=".status.available"
// +kubebuilder:printcolumn:name="ACTIVE",type="integer",JSONPath=".status.active"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories={tencentcloud}
type NetPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NetPoolSpec   `json:"spec"`
	Status NetPoolStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NetPoolList contains a list of NetPool.
type NetPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NetPool `json:"items"`
}

// NetIPSpec is copied from the IP's pool by the controller.
type NetIPSpec struct {
	// Pool is the NetPool the IP belongs to.
	Pool string `json:"pool"`
	// Mask is the pool's prefix length.
	Mask int `json:"mask"`
	// Gateway is the pool's gateway.
	Gateway string `json:"gateway"`
}

// NetIPStatus is who holds the IP. The allocator writes it with the
// resourceVersion it read: of two hosts racing for one IP, the second
// write fails, so an IP is never given twice.
type NetIPStatus struct {
	// Status is Available, Active or Reserved.
	// +kubebuilder:validation:Enum=Available;Active;Reserved
	// +optional
	Status string `json:"status,omitempty"`
	// Host the container runs on.
	// +optional
	Host string `json:"host,omitempty"`
	// Fixed is true while the IP is kept for one Pod or claim.
	// +optional
	Fixed bool `json:"fixed,omitempty"`
	// ContainerID holding the IP while Active.
	// +optional
	ContainerID string `json:"containerID,omitempty"`
	// IPClaimKey is the NetIPClaim ("namespace/name") the IP is fixed for.
	// +optional
	IPClaimKey string `json:"ipClaimKey,omitempty"`
	// PodPrimaryKey is "namespace/name" of the Pod.
	// +optional
	PodPrimaryKey string `json:"podPrimaryKey,omitempty"`
	// PodName of the container.
	// +optional
	PodName string `json:"podName,omitempty"`
	// PodNamespace of the container.
	// +optional
	PodNamespace string `json:"podNamespace,omitempty"`
	// UpdateTime is when the status last changed (RFC 3339).
	// +optional
	UpdateTime string `json:"updateTime,omitempty"`
	// KeepDuration is how long a fixed IP is kept after its container is
	// released; empty keeps it until its claim is deleted.
	// +optional
	KeepDuration string `json:"keepDuration,omitempty"`
	// FixedIPExpiredTime is when a Reserved IP becomes Available (RFC
	// 3339); empty while Active or kept without limit.
	// +optional
	FixedIPExpiredTime string `json:"fixedIPExpiredTime,omitempty"`
}

// +kubebuilder:object:root=true

// A NetIP is one IP of a NetPool, named after the IP. The controller
// creates and deletes them; the allocator changes their status. It
// replaces bcs BCSNetIP.
// +kubebuilder:printcolumn:name="POOL",type="string",JSONPath=".spec.pool"
// +kubebuilder:printcolumn:name="STATUS",type="string",JSONPath=".status.status"
// +kubebuilder:printcolumn:name="HOST",type="string",JSONPath=".status.host"
// +kubebuilder:printcolumn:name="POD",type="string",JSONPath=".status.podPrimaryKey"
// +kubebuilder:printcolumn:name="FIXED",type="boolean",JSONPath=".status.fixed"
// +kubebuilder:printcolumn:name="EXPIRES",type="string",JSONPath=".status.fixedIPExpiredTime",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories={tencentcloud}
type NetIP struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NetIPSpec   `json:"spec"`
	Status NetIPStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NetIPList contains a list of NetIP.
type NetIPList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NetIP `json:"items"`
}

// NetIPClaimSpec asks for one IP that outlives the containers using it.
type NetIPClaimSpec struct {
	// NetIPName asks for this IP; empty takes any IP of the host's pools.
	// +optional
	NetIPName string `json:"netIPName,omitempty"`
	// ExpiredDuration is how long the IP is kept after its container is
	// released; empty keeps it until the claim is deleted.
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$')",message="expiredDuration is a non-negative duration such as 30s, 5m or 2h45m (units ns, us, ms, s, m, h)"
	// +optional
	ExpiredDuration *metav1.Duration `json:"expiredDuration,omitempty"`
}

// NetIPClaimStatus mirrors the NetIP that records this claim (its
// status.ipClaimKey), which is the truth.
type NetIPClaimStatus struct {
	// BoundedIP is the claim's IP while Bound.
	// +optional
	BoundedIP string `json:"boundedIP,omitempty"`
	// Phase is Pending, Bound or Expired.
	// +optional
	Phase string `json:"phase,omitempty"`

	// Conditions: Ready is True while Bound, else False with the phase as
	// its reason, for tools that read Crossplane's conditions (Argo CD's
	// built-in health check for crossplane.io groups). Written with the
	// phase by SetPhase.
	xpv2.ConditionedStatus `json:",inline"`
}

// +kubebuilder:object:root=true

// A NetIPClaim keeps one IP for the Pods that name it (annotation
// network.tencentcloud.crossplane.io/ipclaim). It replaces bcs
// BCSNetIPClaim.
// +kubebuilder:printcolumn:name="IP",type="string",JSONPath=".status.boundedIP"
// +kubebuilder:printcolumn:name="PHASE",type="string",JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="EXPIRED-DURATION",type="string",JSONPath=".spec.expiredDuration"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={tencentcloud}
type NetIPClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NetIPClaimSpec   `json:"spec,omitempty"`
	Status NetIPClaimStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NetIPClaimList contains a list of NetIPClaim.
type NetIPClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NetIPClaim `json:"items"`
}
