// Package v1alpha1 serves tke-extend-network-controller v2's kinds (group
// networking.cloud.tencent.com) so that its users' objects and reads keep
// working: CLBPortPool, accepted as written, which the provider turns into
// a PortPool; CLBPodBinding, which the provider writes as a read-only
// mirror of a tke-extend Pod's PodAddress; and CLBNodeBinding, served and
// never written. The field names are tke-extend's, misspellings included
// (docs/migrate-tke-extend.md).
// +kubebuilder:object:generate=true
// +groupName=networking.cloud.tencent.com
// +versionName=v1alpha1
package v1alpha1
