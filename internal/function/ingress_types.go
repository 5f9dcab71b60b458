package function

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

// The Ingress kind takes bcs-ingress-controller's Ingress (group
// networkextension.bkbcs.tencent.com) field for field, so that its users
// migrate by changing apiVersion. The load balancers come from the same
// annotations bcs reads.
const (
	KindIngress  = "Ingress"
	KindXIngress = "XIngress"

	// AnnotationLBIDs lists load balancers by id: "lb-1,lb-2,ap-shanghai:lb-3".
	AnnotationLBIDs = "networkextension.bkbcs.tencent.com/lbids"
	// AnnotationLBNames lists them by name: "name1,ap-shanghai:name2".
	// The ids win when both are set, as in bcs.
	AnnotationLBNames = "networkextension.bkbcs.tencent.com/lbnames"
)

// IngressSpec is the spec of a bcs Ingress. ProviderConfigRef is our only
// addition.
type IngressSpec struct {
	Rules             []IngressRule                 `json:"rules,omitempty"`
	PortMappings      []IngressPortMapping          `json:"portMappings,omitempty"`
	ProviderConfigRef *xpv2.ProviderConfigReference `json:"providerConfigRef,omitempty"`
}

// IngressRule is one listener port and what it forwards to: Services for a
// layer-4 protocol, layer-7 routes for HTTP and HTTPS.
type IngressRule struct {
	Port              int64                       `json:"port"`
	Protocol          string                      `json:"protocol"`
	ListenerAttribute *IngressListenerAttribute   `json:"listenerAttribute,omitempty"`
	Certificate       *IngressListenerCertificate `json:"certificate,omitempty"`
	Services          []IngressService            `json:"services,omitempty"`
	Layer7Routes      []IngressLayer7Route        `json:"layer7Routes,omitempty"`
}

// IngressService is one port of a Service as backends.
type IngressService struct {
	ServiceName      string          `json:"serviceName"`
	ServiceNamespace string          `json:"serviceNamespace,omitempty"`
	ServicePort      int64           `json:"servicePort"`
	IsDirectConnect  bool            `json:"isDirectConnect,omitempty"`
	HostPort         bool            `json:"hostPort,omitempty"`
	Weight           *IngressWeight  `json:"weight,omitempty"`
	Subsets          []IngressSubset `json:"subsets,omitempty"`
}

// IngressWeight is a backend weight, as bcs nests it.
type IngressWeight struct {
	Value int64 `json:"value"`
}

// IngressSubset weights the Pods of a Service that carry some labels.
type IngressSubset struct {
	LabelSelector map[string]string `json:"labelSelector"`
	Weight        *IngressWeight    `json:"weight,omitempty"`
}

// IngressLayer7Route is a domain and path of an HTTP(S) rule.
type IngressLayer7Route struct {
	Domain            string                    `json:"domain"`
	Path              string                    `json:"path,omitempty"`
	ListenerAttribute *IngressListenerAttribute `json:"listenerAttribute,omitempty"`
	Services          []IngressService          `json:"services,omitempty"`
}

// IngressListenerAttribute holds a listener's (layer 4) or a route's
// (layer 7) forwarding settings.
type IngressListenerAttribute struct {
	SessionTime *int64              `json:"sessionTime,omitempty"`
	LbPolicy    *string             `json:"lbPolicy,omitempty"`
	HealthCheck *IngressHealthCheck `json:"healthCheck,omitempty"`
}

// IngressHealthCheck is a health check in bcs's field names.
type IngressHealthCheck struct {
	Enabled         *bool   `json:"enabled,omitempty"`
	Timeout         *int64  `json:"timeout,omitempty"`
	IntervalTime    *int64  `json:"intervalTime,omitempty"`
	HealthNum       *int64  `json:"healthNum,omitempty"`
	UnHealthNum     *int64  `json:"unHealthNum,omitempty"`
	HTTPCode        *int64  `json:"httpCode,omitempty"`
	HTTPCheckPath   *string `json:"httpCheckPath,omitempty"`
	HTTPCheckMethod *string `json:"httpCheckMethod,omitempty"`
}

// IngressListenerCertificate is the certificate of an HTTPS, TCP_SSL or
// QUIC listener.
type IngressListenerCertificate struct {
	Mode     string `json:"mode,omitempty"`
	CertID   string `json:"certID"`
	CertCaID string `json:"certCaID,omitempty"`
}

// IngressPortMapping gives each Pod of a StatefulSet (or GameStatefulSet)
// with an ordinal in [startIndex, endIndex) its own listener port, or its
// own segment of segmentLength ports.
type IngressPortMapping struct {
	StartPort         int64                       `json:"startPort"`
	EndPort           *int64                      `json:"endPort,omitempty"`
	Protocol          string                      `json:"protocol"`
	StartIndex        int64                       `json:"startIndex"`
	EndIndex          int64                       `json:"endIndex"`
	SegmentLength     int64                       `json:"segmentLength,omitempty"`
	WorkloadKind      string                      `json:"workloadKind"`
	WorkloadName      string                      `json:"workloadName"`
	WorkloadNamespace string                      `json:"workloadNamespace,omitempty"`
	RsStartPort       int64                       `json:"rsStartPort,omitempty"`
	IsRsPortFixed     bool                        `json:"isRsPortFixed,omitempty"`
	HostPort          bool                        `json:"hostPort,omitempty"`
	IgnoreSegment     bool                        `json:"ignoreSegment,omitempty"`
	ListenerAttribute *IngressListenerAttribute   `json:"listenerAttribute,omitempty"`
	Certificate       *IngressListenerCertificate `json:"certificate,omitempty"`
	Routes            []IngressPortMappingRoute   `json:"routes,omitempty"`
}

// IngressPortMappingRoute is a domain and path of each Pod's HTTP(S)
// listener of a port mapping; its backend is the Pod.
type IngressPortMappingRoute struct {
	Domain            string                    `json:"domain"`
	Path              string                    `json:"path,omitempty"`
	ListenerAttribute *IngressListenerAttribute `json:"listenerAttribute,omitempty"`
}

// IngressStatus is what the Ingress reports: per rule and per port-mapping
// Pod, the listeners on every load balancer with their addresses and
// backends (and their health).
type IngressStatus struct {
	LoadBalancers []IngressLoadBalancerStatus `json:"loadBalancers,omitempty"`
	// VIPs of all load balancers, sorted.
	VIPs []string `json:"vips,omitempty"`
	// Listeners created in the cloud, of those composed.
	Listeners       int64                      `json:"listeners"`
	WantedListeners int64                      `json:"wantedListeners"`
	Backends        int64                      `json:"backends"`
	HealthyBackends int64                      `json:"healthyBackends"`
	Rules           []IngressRuleStatus        `json:"rules,omitempty"`
	PortMappings    []IngressPortMappingStatus `json:"portMappings,omitempty"`
}

// IngressLoadBalancerStatus is one load balancer as the annotation names it.
type IngressLoadBalancerStatus struct {
	// Ref is the annotation's entry: an id, region:id, or a name.
	Ref    string   `json:"ref"`
	ID     string   `json:"id,omitempty"`
	Region string   `json:"region,omitempty"`
	VIPs   []string `json:"vips,omitempty"`
}

// IngressRuleStatus is spec.rules[i] in the cloud.
type IngressRuleStatus struct {
	Port      int64                   `json:"port"`
	Protocol  string                  `json:"protocol"`
	Listeners []IngressListenerStatus `json:"listeners,omitempty"`
}

// IngressListenerStatus is one listener on one load balancer.
type IngressListenerStatus struct {
	LoadBalancer string   `json:"loadBalancer"`
	ListenerID   string   `json:"listenerId,omitempty"`
	Port         int64    `json:"port"`
	EndPort      int64    `json:"endPort,omitempty"`
	Addresses    []string `json:"addresses,omitempty"`
	// Backends of a layer-4 listener.
	Backends []clbv1alpha1.TargetObservation `json:"backends,omitempty"`
	// Routes of an HTTP(S) listener.
	Routes []IngressRouteStatus `json:"routes,omitempty"`
}

// IngressRouteStatus is one domain and path of an HTTP(S) listener.
type IngressRouteStatus struct {
	Domain   string                          `json:"domain"`
	Path     string                          `json:"path"`
	RuleID   string                          `json:"ruleId,omitempty"`
	Backends []clbv1alpha1.TargetObservation `json:"backends,omitempty"`
}

// IngressPortMappingStatus is spec.portMappings[i] in the cloud, per Pod.
type IngressPortMappingStatus struct {
	StartPort int64              `json:"startPort"`
	Protocol  string             `json:"protocol"`
	Pods      []IngressPodStatus `json:"pods,omitempty"`
}

// IngressPodStatus is one Pod of a port mapping and its listeners.
type IngressPodStatus struct {
	Pod       string                  `json:"pod"`
	Listeners []IngressListenerStatus `json:"listeners,omitempty"`
}
