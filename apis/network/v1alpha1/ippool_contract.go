package v1alpha1

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
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
func ClaimKey(namespace, name string) string { return namespace + "/" + name }

// PodKey is a Pod's NetIPStatus.PodPrimaryKey.
func PodKey(namespace, name string) string { return namespace + "/" + name }

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
