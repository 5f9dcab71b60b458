// Package v1alpha1 contains the per-Pod address types: PodAddress (one
// Pod's public addresses) and PodAddressPolicy (which Pods get them).
// +kubebuilder:object:generate=true
// +groupName=network.tencentcloud.m.crossplane.io
// +versionName=v1alpha1
package v1alpha1
