package v1alpha1

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Package type metadata.
const (
	Group   = "vpc.tencentcloud.m.crossplane.io"
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

// Address type metadata.
var (
	AddressKind             = reflect.TypeFor[Address]().Name()
	AddressGroupKind        = schema.GroupKind{Group: Group, Kind: AddressKind}.String()
	AddressGroupVersionKind = SchemeGroupVersion.WithKind(AddressKind)
)

func init() {
	SchemeBuilder.Register(&Address{}, &AddressList{})
}
