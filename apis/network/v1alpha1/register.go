package v1alpha1

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Package type metadata.
const (
	Group   = "network.tencentcloud.m.crossplane.io"
	Version = "v1alpha1"
)

var (
	// SchemeGroupVersion is the group version used to register these objects.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

	// SchemeBuilder is used to add Go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}

	// AddToScheme adds the types of this group to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// PodAddress type metadata.
var (
	PodAddressKind             = reflect.TypeFor[PodAddress]().Name()
	PodAddressGroupVersionKind = SchemeGroupVersion.WithKind(PodAddressKind)
)

// PodAddressPolicy type metadata.
var (
	PodAddressPolicyKind             = reflect.TypeFor[PodAddressPolicy]().Name()
	PodAddressPolicyGroupVersionKind = SchemeGroupVersion.WithKind(PodAddressPolicyKind)
)

// EIPGrant type metadata.
var (
	EIPGrantKind             = reflect.TypeFor[EIPGrant]().Name()
	EIPGrantGroupVersionKind = SchemeGroupVersion.WithKind(EIPGrantKind)
)

// NetPool, NetIP and NetIPClaim type metadata.
var (
	NetPoolKind                = reflect.TypeFor[NetPool]().Name()
	NetPoolGroupVersionKind    = SchemeGroupVersion.WithKind(NetPoolKind)
	NetIPKind                  = reflect.TypeFor[NetIP]().Name()
	NetIPGroupVersionKind      = SchemeGroupVersion.WithKind(NetIPKind)
	NetIPClaimKind             = reflect.TypeFor[NetIPClaim]().Name()
	NetIPClaimGroupVersionKind = SchemeGroupVersion.WithKind(NetIPClaimKind)
)

// WorkloadCluster and RemotePod type metadata.
var (
	WorkloadClusterKind             = reflect.TypeFor[WorkloadCluster]().Name()
	WorkloadClusterGroupVersionKind = SchemeGroupVersion.WithKind(WorkloadClusterKind)
	RemotePodKind                   = reflect.TypeFor[RemotePod]().Name()
	RemotePodGroupVersionKind       = SchemeGroupVersion.WithKind(RemotePodKind)
)

func init() {
	SchemeBuilder.Register(&PodAddress{}, &PodAddressList{})
	SchemeBuilder.Register(&PodAddressPolicy{}, &PodAddressPolicyList{})
	SchemeBuilder.Register(&EIPGrant{}, &EIPGrantList{})
	SchemeBuilder.Register(&NetPool{}, &NetPoolList{}, &NetIP{}, &NetIPList{}, &NetIPClaim{}, &NetIPClaimList{})
	SchemeBuilder.Register(&WorkloadCluster{}, &WorkloadClusterList{}, &RemotePod{}, &RemotePodList{})
}
