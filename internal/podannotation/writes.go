package podannotation

import corev1 "k8s.io/api/core/v1"

// ProviderAnnotations are the annotations the provider writes on Pods, in
// the order examples/provider/pod-writes-policy.yaml lists them: that
// ValidatingAdmissionPolicy lets the provider's ServiceAccount change these
// and no other annotation (besides those AnnotationNamedAddresses names).
func ProviderAnnotations() []string {
	return []string{
		AnnotationAddresses, AnnotationStatus, BCSAnnotationBindings, BCSAnnotationStatus,
		TKEAnnotationMappingResult, TKEAnnotationMappingStatus, TKEAnnotationHostPortMappingResult, TKEAnnotationHostPortMappingStatus,
		AnnotationNamedAddresses,
	}
}

// ProviderConditions are the Pod conditions the provider sets: its own
// address condition and, on Pods that carry bcs's readiness gate, that
// one. The same policy keeps every other condition as it was.
func ProviderConditions() []corev1.PodConditionType {
	return []corev1.PodConditionType{ConditionAddressReady, BCSConditionPortBindingReady}
}
