package v1alpha1

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Package type metadata.
const (
	Group   = "networking.cloud.tencent.com"
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

// CLBPortPool type metadata.
var (
	CLBPortPoolKind             = reflect.TypeFor[CLBPortPool]().Name()
	CLBPortPoolGroupVersionKind = SchemeGroupVersion.WithKind(CLBPortPoolKind)
)

// CLBPodBinding type metadata.
var (
	CLBPodBindingKind             = reflect.TypeFor[CLBPodBinding]().Name()
	CLBPodBindingGroupVersionKind = SchemeGroupVersion.WithKind(CLBPodBindingKind)
)

// CLBNodeBinding type metadata.
var (
	CLBNodeBindingKind             = reflect.TypeFor[CLBNodeBinding]().Name()
	CLBNodeBindingGroupVersionKind = SchemeGroupVersion.WithKind(CLBNodeBindingKind)
)

func init() {
	SchemeBuilder.Register(&CLBPortPool{}, &CLBPortPoolList{})
	SchemeBuilder.Register(&CLBPodBinding{}, &CLBPodBindingList{}, &CLBNodeBinding{}, &CLBNodeBindingList{})
}

// Annotations of a CLBPortPool that the provider reads besides the spec.
// The provider's GameServerSet controller writes them on the pools it
// makes; an admin may write them too.
const (
	// AnnotationProtocols lists the protocols of the PortPool's listeners,
	// comma-separated (TCP, UDP, TCP_SSL, QUIC), instead of the default
	// TCP,UDP: "UDP" makes one listener per port, not two.
	AnnotationProtocols = "network.tencentcloud.crossplane.io/pool-protocols"
	// AnnotationNamespace limits the PortPool to the Pods of this one
	// namespace; without it the pool serves every namespace.
	AnnotationNamespace = "network.tencentcloud.crossplane.io/pool-namespace"
	// AnnotationGameServerSet names the GameServerSet (namespace/name)
	// the provider made the pool for.
	AnnotationGameServerSet = "network.tencentcloud.crossplane.io/gameserverset"
	// AnnotationTKEAutoCreated lists, comma-separated, the load balancers
	// tke-extend-network-controller created for the pool (autoCreated in
	// the status it wrote). The provider writes it once, from that status,
	// before its own status replaces it, and copies it to the PortPool,
	// which uses them and, once the switch is made, tags them as its own
	// auto-created load balancers (docs/migrate-tke-extend.md).
	AnnotationTKEAutoCreated = "network.tencentcloud.crossplane.io/tke-extend-auto-created"
	// LabelMadeFor is "gameserverset" on pools the provider made for a
	// GameServerSet, so that it finds them.
	LabelMadeFor = "network.tencentcloud.crossplane.io/made-for"
	// MadeForGameServerSet is LabelMadeFor's value.
	MadeForGameServerSet = "gameserverset"
)
