package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// LabelNetPool on a NetIP names its pool, for kubectl get netips -l.
const LabelNetPool = "network.tencentcloud.crossplane.io/netpool"

// AnnotationIPClaim on a Pod names the NetIPClaim (in the Pod's namespace)
// whose IP its containers get. AnnotationBCSIPClaim is the bcs
// netservice annotation, honoured the same way for migrated Pods.
const (
	AnnotationIPClaim    = "network.tencentcloud.crossplane.io/ipclaim"
	AnnotationBCSIPClaim = "netservicecontroller.bkbcs.tencent.com/ipclaim"
)

// AnnotationFixedIPKeep on a StatefulSet Pod is how long (a Go duration)
// its fixed IP is kept after its container is released; without it the
// allocator's default applies.
const AnnotationFixedIPKeep = "network.tencentcloud.crossplane.io/fixed-ip-keep"

// Field indexes of NetIPs, registered by the ippool controller.
const (
	// NetIPPoolIndex indexes NetIPs by spec.pool.
	NetIPPoolIndex = "network.tencentcloud.crossplane.io/netip-pool"
	// NetIPFreeIndex indexes Available NetIPs by spec.pool: what the
	// allocator picks from.
	NetIPFreeIndex = "network.tencentcloud.crossplane.io/netip-free"
	// NetIPContainerIndex indexes held NetIPs by ContainerKey.
	NetIPContainerIndex = "network.tencentcloud.crossplane.io/netip-container"
	// NetIPHostIndex indexes held NetIPs by status.host.
	NetIPHostIndex = "network.tencentcloud.crossplane.io/netip-host"
	// NetIPFixedIndex indexes fixed NetIPs by FixedKey.
	NetIPFixedIndex = "network.tencentcloud.crossplane.io/netip-fixed"
)

// ContainerKey names one container on one host: container IDs are unique
// per host only.
func ContainerKey(host, containerID string) string { return host + "/" + containerID }

// ClaimKey is a NetIPClaim's NetIPStatus.IPClaimKey.
func ClaimKey(namespace, name string) string { return objectKey(namespace, name) }

// ParseClaimKey returns the namespace and name of a ClaimKey; a key that
// is not one names no claim.
func ParseClaimKey(key string) (types.NamespacedName, bool) { return parseObjectKey(key) }

// PodKey is a Pod's NetIPStatus.PodPrimaryKey.
func PodKey(namespace, name string) string { return objectKey(namespace, name) }

// FixedKey is what a fixed IP is kept for: its claim, else its Pod. The
// prefixes keep a claim and a Pod of the same name apart.
func FixedKey(s NetIPStatus) string {
	switch {
	case !s.Fixed:
		return ""
	case s.IPClaimKey != "":
		return "claim:" + s.IPClaimKey
	default:
		return "pod:" + s.PodPrimaryKey
	}
}

// NetIPIndexes are the NetIP field index functions by index name.
var NetIPIndexes = map[string]client.IndexerFunc{
	NetIPPoolIndex: func(o client.Object) []string {
		ip, ok := o.(*NetIP)
		if !ok {
			return nil
		}
		return []string{ip.Spec.Pool}
	},
	NetIPFreeIndex: func(o client.Object) []string {
		ip, ok := o.(*NetIP)
		if !ok || ip.Status.Status != NetIPAvailable {
			return nil
		}
		return []string{ip.Spec.Pool}
	},
	NetIPContainerIndex: func(o client.Object) []string {
		ip, ok := o.(*NetIP)
		if !ok || ip.Status.Status != NetIPActive {
			return nil
		}
		return []string{ContainerKey(ip.Status.Host, ip.Status.ContainerID)}
	},
	NetIPHostIndex: func(o client.Object) []string {
		ip, ok := o.(*NetIP)
		if !ok || ip.Status.Status != NetIPActive {
			return nil
		}
		return []string{ip.Status.Host}
	},
	NetIPFixedIndex: func(o client.Object) []string {
		ip, ok := o.(*NetIP)
		if !ok || ip.Status.Status == NetIPAvailable {
			return nil
		}
		if k := FixedKey(ip.Status); k != "" {
			return []string{k}
		}
		return nil
	},
}

// SetPhase sets the phase, the IP (kept only while Bound) and the Ready
// condition that says the same; it reports whether anything changed, so
// that writers skip a write that changes nothing.
func (s *NetIPClaimStatus) SetPhase(phase, ip string) bool {
	if phase != ClaimBound {
		ip = ""
	}
	c := claimReady(phase, ip)
	if s.Phase == phase && s.BoundedIP == ip && s.GetCondition(xpv2.TypeReady).Equal(c) {
		return false
	}
	s.Phase, s.BoundedIP = phase, ip
	s.SetConditions(c)
	return true
}

// claimReady is the Ready condition of a claim in phase.
func claimReady(phase, ip string) xpv2.Condition {
	c := xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: xpv2.ConditionReason(phase), LastTransitionTime: metav1.Now()}
	switch phase {
	case ClaimBound:
		c.Status, c.Reason, c.Message = corev1.ConditionTrue, xpv2.ReasonAvailable, "Bound to "+ip
	case ClaimExpired:
		c.Message = "The IP was returned to its pool after expiredDuration; the next Pod naming the claim gets an IP again"
	default:
		c.Reason, c.Message = ClaimPending, "Waiting for a Pod that names the claim to get an IP"
	}
	return c
}

// The allocator API's callers are authorised with SubjectAccessReviews on
// the subresource allocations of a NetPool (cluster-scoped, by name), so
// an admin grants them with a plain ClusterRole (docs/ip-pools.md).
const (
	AllocationsGroup       = Group
	AllocationsResource    = "netpools"
	AllocationsSubresource = "allocations"

	// VerbAllocate lets a caller take IPs of the pool (POST).
	VerbAllocate = "create"
	// VerbRelease lets a caller free IPs of the pool (DELETE).
	VerbRelease = "delete"
	// VerbAnyHost lets a caller act for a host that is not its own node's:
	// without it only a node identity (system:node:<name>, or a token bound
	// to a Pod on the node) may allocate or release, and only for the
	// node's InternalIPs.
	VerbAnyHost = "anyhost"
)
