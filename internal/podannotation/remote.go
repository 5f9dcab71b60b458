package podannotation

// RequestAnnotations are the annotations by which a Pod asks for addresses
// or changes how it is served, in every syntax we read: what an agent of a
// workload cluster copies into the Pod's RemotePod. The annotations the
// provider writes (addresses, status) are not among them.
func RequestAnnotations() []string {
	return []string{
		AnnotationPorts, AnnotationStrategy, AnnotationKeepDuration, AnnotationBackend,
		AnnotationReadinessGate, AnnotationEIP, AnnotationIsolated,
		BCSAnnotationEnabled, BCSAnnotationPorts, BCSAnnotationKeepDuration, BCSAnnotationReadinessGate,
		TKEAnnotationEIPAttributes, TKEAnnotationEIPClaimDeletePolicy, TKEAnnotationEnableMapping,
		TKEAnnotationPortMapping, TKEAnnotationEnableHostPortMapping, TKEAnnotationHostPortMapping, TKEAnnotationRetain,
	}
}

// What the agent of a workload cluster writes on its Pods when it has been
// cut off from the management cluster for longer than the cluster's
// disconnect grace period, so the provider has released their addresses.
const (
	// AnnotationHubUnreachable is the time (RFC 3339) of the agent's last
	// heartbeat that reached the management cluster. It marks a Pod whose
	// addresses were withdrawn; the agent removes it when it tells the Pod
	// again what the provider says.
	AnnotationHubUnreachable = "network.tencentcloud.crossplane.io/hub-unreachable-since"
	// ReasonHubUnreachable is the reason of the address conditions (False)
	// and of the Warning Event of a withdrawn Pod.
	ReasonHubUnreachable = "HubUnreachable"
)
