// Package v1alpha1 serves tke-extend-network-controller v2's CLBPortPool
// (group networking.cloud.tencent.com), so that its users' pools are
// accepted as they are written. The field names are tke-extend's,
// misspellings included; the provider turns each CLBPortPool into a
// PortPool (docs/migrate-tke-extend.md).
// +kubebuilder:object:generate=true
// +groupName=networking.cloud.tencent.com
// +versionName=v1alpha1
package v1alpha1
