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
		OKGAnnotationNetworkDisabled,
	}
}
