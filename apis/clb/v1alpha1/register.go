package v1alpha1

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Package type metadata.
const (
	Group   = "clb.tencentcloud.m.crossplane.io"
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

// LoadBalancer type metadata.
var (
	LoadBalancerKind             = reflect.TypeFor[LoadBalancer]().Name()
	LoadBalancerGroupKind        = schema.GroupKind{Group: Group, Kind: LoadBalancerKind}.String()
	LoadBalancerGroupVersionKind = SchemeGroupVersion.WithKind(LoadBalancerKind)
)

// Listener type metadata.
var (
	ListenerKind             = reflect.TypeFor[Listener]().Name()
	ListenerGroupKind        = schema.GroupKind{Group: Group, Kind: ListenerKind}.String()
	ListenerGroupVersionKind = SchemeGroupVersion.WithKind(ListenerKind)
)

// Rule type metadata.
var (
	RuleKind             = reflect.TypeFor[Rule]().Name()
	RuleGroupKind        = schema.GroupKind{Group: Group, Kind: RuleKind}.String()
	RuleGroupVersionKind = SchemeGroupVersion.WithKind(RuleKind)
)

// TargetSet type metadata.
var (
	TargetSetKind             = reflect.TypeFor[TargetSet]().Name()
	TargetSetGroupKind        = schema.GroupKind{Group: Group, Kind: TargetSetKind}.String()
	TargetSetGroupVersionKind = SchemeGroupVersion.WithKind(TargetSetKind)
)

// PortPool type metadata.
var (
	PortPoolKind             = reflect.TypeFor[PortPool]().Name()
	PortPoolGroupKind        = schema.GroupKind{Group: Group, Kind: PortPoolKind}.String()
	PortPoolGroupVersionKind = SchemeGroupVersion.WithKind(PortPoolKind)
)

func init() {
	SchemeBuilder.Register(&LoadBalancer{}, &LoadBalancerList{})
	SchemeBuilder.Register(&Listener{}, &ListenerList{})
	SchemeBuilder.Register(&Rule{}, &RuleList{})
	SchemeBuilder.Register(&TargetSet{}, &TargetSetList{})
	SchemeBuilder.Register(&PortPool{}, &PortPoolList{})
}
