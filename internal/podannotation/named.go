package podannotation

// AnnotationNamedAddresses is written by the provider: the comma-separated,
// sorted names of the annotations it set to a port's address because the
// request named them (PortRequest.AddressAnnotation). It lets the provider
// remove an annotation that is no longer asked for without touching the
// Pod's other annotations.
const AnnotationNamedAddresses = "network.tencentcloud.crossplane.io/address-annotations"
