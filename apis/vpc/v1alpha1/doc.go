// Package v1alpha1 contains the managed resources of the Tencent Cloud VPC
// API: elastic public IPs (Address).
// +kubebuilder:object:generate=true
// +groupName=vpc.tencentcloud.m.crossplane.io
// +versionName=v1alpha1
package v1alpha1
