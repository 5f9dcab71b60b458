package function

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

// The composite kinds this function composes. The v2 XRs are namespaced;
// the legacy XRs (cluster scoped, X-prefixed) are created by Crossplane for
// claims, whose kinds are the unprefixed names in the legacy group. The two
// groups exist because two XRDs cannot define the same kind in one group,
// and DedicatedCLBService must keep its name in both forms.
const (
	// GroupV2 holds the namespaced (Crossplane v2) composite kinds.
	GroupV2 = "workload.tencentcloud.crossplane.io"
	// GroupLegacy holds the legacy cluster-scoped composites and their
	// claims.
	GroupLegacy = "claims.workload.tencentcloud.crossplane.io"

	KindPodPublicAddress     = "PodPublicAddress"
	KindXPodPublicAddress    = "XPodPublicAddress"
	KindDedicatedCLBService  = "DedicatedCLBService"
	KindXDedicatedCLBService = "XDedicatedCLBService"
)

// PodPublicAddressSpec is the spec of a PodPublicAddress: the Pods matching
// the selector get a public address for each port.
type PodPublicAddressSpec struct {
	// Selector of the Pods, in the composite's (or claim's) namespace.
	Selector metav1.LabelSelector `json:"selector"`
	// Ports to expose.
	Ports []Port `json:"ports"`
	// LoadBalancers the addresses come from.
	LoadBalancers LoadBalancers `json:"loadBalancers"`
	// Region of the existing load balancers when it is not the
	// ProviderConfig's region.
	Region string `json:"region,omitempty"`
	// PortRange is the range of public ports.
	PortRange PortRange `json:"portRange"`
	// SegmentLength gives each Pod port a segment of this many ports.
	SegmentLength *int64 `json:"segmentLength,omitempty"`
	// AllocationPolicy is the PortPool's: LeastUsed, InOrder or Random.
	AllocationPolicy *string `json:"allocationPolicy,omitempty"`
	// Strategy is Dynamic or Ordinal.
	Strategy string `json:"strategy,omitempty"`
	// KeepDuration keeps a deleted Pod's ports for a new Pod of its name.
	KeepDuration *metav1.Duration `json:"keepDuration,omitempty"`
	// Backend is PodIP, HostPort or NodePort.
	Backend string `json:"backend,omitempty"`
	// ReadinessGate asks that the Pods stay NotReady until bound.
	ReadinessGate bool `json:"readinessGate,omitempty"`
	// Listener settings of the pool's listeners.
	Listener *clbv1alpha1.PoolListenerSettings `json:"listener,omitempty"`
	// ProviderConfigRef of the composed load balancers and pool.
	ProviderConfigRef *xpv2.ProviderConfigReference `json:"providerConfigRef,omitempty"`
}

// A Port is one container port to expose.
type Port struct {
	// Port is the container port, by number or name.
	Port intstr.IntOrString `json:"port"`
	// Protocol is TCP, UDP, TCP_UDP, TCP_SSL or QUIC.
	Protocol string `json:"protocol"`
	// AddressAnnotation, if set, is the Pod annotation the address is
	// written to.
	AddressAnnotation string `json:"addressAnnotation,omitempty"`
}

// PortRange is an inclusive range of public ports.
type PortRange struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// LoadBalancers says where the addresses come from: existing load balancers
// (observed, never changed or deleted), load balancers created from a
// template up front, and more created by the pool when it runs low.
type LoadBalancers struct {
	// ExistingIDs are ids (lb-…) of load balancers to use as they are.
	ExistingIDs []string `json:"existingIds,omitempty"`
	// Template of the load balancers to create.
	Template *clbv1alpha1.LoadBalancerParameters `json:"template,omitempty"`
	// Count of load balancers created from the template up front.
	Count int64 `json:"count,omitempty"`
	// AutoCreate lets the pool create load balancers from the template
	// when free ports run low.
	AutoCreate *AutoCreate `json:"autoCreate,omitempty"`
}

// AutoCreate bounds the load balancers a pool creates by itself.
type AutoCreate struct {
	MaxLoadBalancers int64  `json:"maxLoadBalancers"`
	MinFreeSlots     *int64 `json:"minFreeSlots,omitempty"`
}

// DedicatedCLBServiceSpec is the spec of tke-extend-network-controller's
// DedicatedCLBService, field for field, so that its users migrate by
// changing apiVersion. ProviderConfigRef is our only addition.
type DedicatedCLBServiceSpec struct {
	LbRegion                    string                        `json:"lbRegion,omitempty"`
	MinPort                     *int64                        `json:"minPort,omitempty"`
	MaxPort                     *int64                        `json:"maxPort,omitempty"`
	MaxPod                      *int64                        `json:"maxPod,omitempty"`
	Selector                    map[string]string             `json:"selector"`
	Ports                       []DedicatedCLBServicePort     `json:"ports"`
	ListenerExtensiveParameters string                        `json:"listenerExtensiveParameters,omitempty"`
	ExistedLbIDs                []string                      `json:"existedLbIds,omitempty"`
	LbAutoCreate                *LbAutoCreate                 `json:"lbAutoCreate,omitempty"`
	ProviderConfigRef           *xpv2.ProviderConfigReference `json:"providerConfigRef,omitempty"`
}

// DedicatedCLBServicePort is one port of a DedicatedCLBService.
type DedicatedCLBServicePort struct {
	Protocol             string `json:"protocol"`
	TargetPort           int64  `json:"targetPort"`
	AddressPodAnnotation string `json:"addressPodAnnotation,omitempty"`
}

// LbAutoCreate turns on creating load balancers when ports run out.
type LbAutoCreate struct {
	Enable              bool   `json:"enable,omitempty"`
	ExtensiveParameters string `json:"extensiveParameters,omitempty"`
}

// Status is what every composite of ours reports, aggregated from its
// composed resources.
type Status struct {
	// LoadBalancerIDs of the pool, existing and created.
	LoadBalancerIDs []string `json:"loadBalancerIds,omitempty"`
	// VIPs of those load balancers.
	VIPs []string `json:"vips,omitempty"`
	// AllocatedPorts and FreePorts are the pool's slots (ports, or
	// segments when segmentLength > 1) in use and free.
	AllocatedPorts int64 `json:"allocatedPorts"`
	FreePorts      int64 `json:"freePorts"`
	// MatchedPods and BoundPods count the selected Pods and those whose
	// addresses all forward to them.
	MatchedPods int64 `json:"matchedPods"`
	BoundPods   int64 `json:"boundPods"`
}
