// Package v1alpha1 contains the namespaced provider configuration types of
// the tencentcloud.m.crossplane.io API group.
// +kubebuilder:object:generate=true
// +groupName=tencentcloud.m.crossplane.io
// +versionName=v1alpha1
package v1alpha1
