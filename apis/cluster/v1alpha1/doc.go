// Package v1alpha1 contains the cluster-scoped provider configuration type of
// the tencentcloud.crossplane.io API group.
// +kubebuilder:object:generate=true
// +groupName=tencentcloud.crossplane.io
// +versionName=v1alpha1
package v1alpha1
