// Package v1alpha1 contains the managed resources of Tencent Cloud Load
// Balancer (CLB): load balancers, listeners, rules and target sets.
// +kubebuilder:object:generate=true
// +groupName=clb.tencentcloud.m.crossplane.io
// +versionName=v1alpha1
package v1alpha1
