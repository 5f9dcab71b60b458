package function

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/crossplane/function-sdk-go/resource"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

// Protocols of an Ingress rule or port mapping.
const (
	protoTCP    = "TCP"
	protoUDP    = "UDP"
	protoHTTP   = "HTTP"
	protoHTTPS  = "HTTPS"
	protoTCPSSL = "TCP_SSL"
	protoQUIC   = "QUIC"
)

// defaultIngressWeight is bcs's weight of a backend without one.
const defaultIngressWeight = 10

// maxNameLength keeps composed names within a label value, which is also
// the listener name's limit in the cloud with room to spare.
const maxNameLength = 63

func isLayer7(proto string) bool { return proto == protoHTTP || proto == protoHTTPS }

func needsCertificate(proto string) bool {
	return proto == protoHTTPS || proto == protoTCPSSL || proto == protoQUIC
}

// transport is the port space a protocol's listener takes: a CLB has one
// TCP and one UDP listener per port at most.
func transport(proto string) string {
	if proto == protoUDP || proto == protoQUIC {
		return protoUDP
	}
	return protoTCP
}

// ingressLB is one load balancer of the lbids (or lbnames) annotation.
type ingressLB struct {
	ref    string // the annotation's entry
	region string // "" for the ProviderConfig's region
	id     string // set for lbids
	name   string // set for lbnames
	key    string // in composed names
	part   resource.Name
	obj    string // metadata.name of its LoadBalancer
}

// regionRef is the region of the resources on the load balancer; nil for
// the ProviderConfig's.
func (lb *ingressLB) regionRef() *string {
	if lb.region == "" {
		return nil
	}
	return &lb.region
}

// plannedListener is one composed Listener on one load balancer, with its
// TargetSet (layer 4) or its routes (layer 7).
type plannedListener struct {
	lb            *ingressLB
	part, targets resource.Name
	port, endPort int64
	routes        []plannedRoute
}

// plannedRoute is one composed Rule and its TargetSet.
type plannedRoute struct {
	domain, path  string
	part, targets resource.Name
}

type plannedPod struct {
	pod       string
	listeners []plannedListener
}

// ingressPlan says what was composed for which part of the spec, for the
// status to be read back in the spec's shape.
type ingressPlan struct {
	lbs          []*ingressLB
	rules        [][]plannedListener
	mappings     [][]plannedPod
	ruleSpecs    []IngressRule
	mappingSpecs []IngressPortMapping
}

// parseLoadBalancers reads the lbids annotation, or lbnames when there is
// no lbids: comma-separated entries, each "<lb>" or "<region>:<lb>".
func parseLoadBalancers(annotations map[string]string) ([]*ingressLB, error) {
	v, byID := annotations[AnnotationLBIDs], true
	if strings.TrimSpace(v) == "" {
		v, byID = annotations[AnnotationLBNames], false
	}
	var out []*ingressLB
	seen := map[string]bool{}
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		lb := &ingressLB{ref: e}
		what := e
		if r, rest, ok := strings.Cut(e, ":"); ok {
			if r == "" || rest == "" {
				return nil, fmt.Errorf("load balancer %q: want <id>, or <region>:<id>", e)
			}
			lb.region, what = r, rest
		}
		if byID {
			if !strings.HasPrefix(what, "lb-") {
				return nil, fmt.Errorf("annotation %s: %q is not a load balancer id (lb-…); name load balancers in %s", AnnotationLBIDs, what, AnnotationLBNames)
			}
			lb.id = what
		} else {
			lb.name = what
		}
		if seen[e] {
			return nil, fmt.Errorf("load balancer %q is listed twice", e)
		}
		seen[e] = true
		lb.key = nameKey(e, byID)
		lb.part = resource.Name("loadbalancer-" + lb.key)
		out = append(out, lb)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("metadata.annotations: set %s (or %s) to the load balancers, e.g. \"lb-1,ap-shanghai:lb-2\"", AnnotationLBIDs, AnnotationLBNames)
	}
	return out, nil
}

// nameKey turns an annotation entry into a part of a composed name. Ids
// are kept ("ap-shanghai-lb-3"); names, which may hold any character, are
// prefixed and get a hash when they had to be changed, so that two names
// never share a key.
func nameKey(entry string, byID bool) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, entry)
	if byID {
		return clean
	}
	if clean != entry {
		clean += "-" + shortHash(entry)
	}
	return "n-" + clean
}

func shortHash(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])[:8]
}

// objectName joins parts into a composed resource's name, cut with a hash
// of the whole when it would be too long.
func objectName(parts ...string) string {
	n := strings.Join(parts, "-")
	if len(n) <= maxNameLength {
		return n
	}
	return strings.TrimRight(n[:maxNameLength-9], "-.") + "-" + shortHash(n)
}

// ingressComposer composes one Ingress.
type ingressComposer struct {
	t     target
	pc    *xpv2.ProviderConfigReference
	parts []part
	names map[resource.Name]string
}

// composeIngress turns an Ingress into Observe-only LoadBalancers and, per
// load balancer, a Listener per rule port and port-mapping port (or
// segment), a Rule per layer-7 route, and a TargetSet per layer-4 listener
// and per Rule whose source follows the Services or the mapped Pods.
func composeIngress(t target, s *IngressSpec, annotations map[string]string) ([]part, *ingressPlan, error) {
	lbs, err := parseLoadBalancers(annotations)
	if err != nil {
		return nil, nil, err
	}
	if err := validateIngress(s); err != nil {
		return nil, nil, err
	}
	c := &ingressComposer{t: t, pc: s.ProviderConfigRef, names: map[resource.Name]string{}}
	plan := &ingressPlan{lbs: lbs, ruleSpecs: s.Rules, mappingSpecs: s.PortMappings}
	for _, lb := range lbs {
		c.loadBalancer(lb)
	}
	for _, r := range s.Rules {
		proto := strings.ToUpper(r.Protocol)
		var ls []plannedListener
		for _, lb := range lbs {
			l := c.listener(lb, proto, r.Port, 0, r.ListenerAttribute, r.Certificate)
			if isLayer7(proto) {
				for _, rt := range r.Layer7Routes {
					attr := rt.ListenerAttribute
					if attr == nil {
						attr = r.ListenerAttribute
					}
					l.routes = append(l.routes, c.route(lb, &l, rt.Domain, rt.Path, attr, serviceSource(rt.Services)))
				}
			} else {
				l.targets = c.targetSet(lb, &l, nil, serviceSource(r.Services))
			}
			ls = append(ls, l)
		}
		plan.rules = append(plan.rules, ls)
	}
	for _, m := range s.PortMappings {
		plan.mappings = append(plan.mappings, c.portMapping(lbs, m))
	}
	return c.parts, plan, nil
}

func (c *ingressComposer) add(name resource.Name, obj interface {
	runtime.Object
	GetName() string
}) {
	c.parts = append(c.parts, part{name: name, obj: obj})
	c.names[name] = obj.GetName()
}

func (c *ingressComposer) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: c.t.namespace, Name: name}
}

// loadBalancer imports an existing load balancer, observed only: by id as
// its external name, or by name for the provider to look up.
func (c *ingressComposer) loadBalancer(lb *ingressLB) {
	lb.obj = objectName(c.t.name, lb.key)
	o := loadBalancer(c.t, lb.obj, c.pc)
	o.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
	o.Spec.ForProvider.Region = lb.regionRef()
	if lb.id != "" {
		meta.SetExternalName(o, lb.id)
	} else {
		// Observe only without an external name: the provider finds it
		// by name and records its id.
		o.Spec.ForProvider.Name = &lb.name
	}
	c.add(lb.part, o)
}

func (c *ingressComposer) listener(lb *ingressLB, proto string, port, endPort int64, attr *IngressListenerAttribute, cert *IngressListenerCertificate) plannedListener {
	key := lb.key + "-" + strings.ToLower(proto) + "-" + strconv.FormatInt(port, 10)
	l := &clbv1alpha1.Listener{
		TypeMeta:   metav1.TypeMeta{APIVersion: clbv1alpha1.SchemeGroupVersion.String(), Kind: clbv1alpha1.ListenerKind},
		ObjectMeta: c.meta(objectName(c.t.name, key)),
	}
	l.Spec.ProviderConfigReference = c.pc
	p := &l.Spec.ForProvider
	p.Region = lb.regionRef()
	p.LoadBalancerIDRef = &xpv2.NamespacedReference{Name: lb.obj}
	p.Protocol, p.Port = proto, port
	if endPort > port {
		p.EndPort = &endPort
	}
	// Layer-7 listeners take these on their Rules.
	if !isLayer7(proto) && attr != nil {
		p.Scheduler, p.SessionExpireTime, p.HealthCheck = upper(attr.LbPolicy), attr.SessionTime, healthCheck(attr.HealthCheck)
	}
	if cert != nil {
		p.Certificate = &clbv1alpha1.Certificate{CertID: cert.CertID, SSLMode: upper(nonEmpty(cert.Mode))}
		if cert.CertCaID != "" {
			p.Certificate.CertCaID = &cert.CertCaID
		}
	}
	name := resource.Name("listener-" + key)
	c.add(name, l)
	return plannedListener{lb: lb, part: name, port: port, endPort: endPort}
}

func (c *ingressComposer) route(lb *ingressLB, l *plannedListener, domain, path string, attr *IngressListenerAttribute, src *clbv1alpha1.TargetSource) plannedRoute {
	if path == "" {
		path = "/"
	}
	key := lb.key + "-" + strconv.FormatInt(l.port, 10) + "-" + shortHash(domain, path)
	r := &clbv1alpha1.Rule{
		TypeMeta:   metav1.TypeMeta{APIVersion: clbv1alpha1.SchemeGroupVersion.String(), Kind: clbv1alpha1.RuleKind},
		ObjectMeta: c.meta(objectName(c.t.name, key)),
	}
	r.Spec.ProviderConfigReference = c.pc
	p := &r.Spec.ForProvider
	p.Region = lb.regionRef()
	p.LoadBalancerIDRef = &xpv2.NamespacedReference{Name: lb.obj}
	p.ListenerIDRef = &xpv2.NamespacedReference{Name: c.objName(l.part)}
	p.Domain, p.URL = domain, path
	if attr != nil {
		p.Scheduler, p.SessionExpireTime, p.HealthCheck = upper(attr.LbPolicy), attr.SessionTime, healthCheck(attr.HealthCheck)
	}
	name := resource.Name("rule-" + key)
	c.add(name, r)
	rt := plannedRoute{domain: domain, path: path, part: name}
	rt.targets = c.targetSet(lb, l, &rt, src)
	return rt
}

// targetSet composes the backends of a layer-4 listener, or of a route
// when rt is set. It shares its listener's (or rule's) name.
func (c *ingressComposer) targetSet(lb *ingressLB, l *plannedListener, rt *plannedRoute, src *clbv1alpha1.TargetSource) resource.Name {
	of := l.part
	if rt != nil {
		of = rt.part
	}
	ts := &clbv1alpha1.TargetSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: clbv1alpha1.SchemeGroupVersion.String(), Kind: clbv1alpha1.TargetSetKind},
		ObjectMeta: c.meta(c.objName(of)),
	}
	ts.Spec.ProviderConfigReference = c.pc
	p := &ts.Spec.ForProvider
	p.Region = lb.regionRef()
	p.LoadBalancerIDRef = &xpv2.NamespacedReference{Name: lb.obj}
	p.ListenerIDRef = &xpv2.NamespacedReference{Name: c.objName(l.part)}
	if rt != nil {
		p.RuleIDRef = &xpv2.NamespacedReference{Name: c.objName(rt.part)}
	}
	p.Source = src
	name := resource.Name("targets-" + strings.SplitN(string(of), "-", 2)[1])
	c.add(name, ts)
	return name
}

// objName is the metadata.name of a part composed before.
func (c *ingressComposer) objName(n resource.Name) string { return c.names[n] }

// portMapping composes, per Pod ordinal in [startIndex, endIndex) and per
// load balancer, one port-range listener of segmentLength ports (TCP and
// UDP), or one listener per port (ignoreSegment, or any other protocol),
// whose backend is the Pod <workloadName>-<ordinal>.
func (c *ingressComposer) portMapping(lbs []*ingressLB, m IngressPortMapping) []plannedPod {
	proto := strings.ToUpper(m.Protocol)
	seg := max(m.SegmentLength, 1)
	ranged := seg > 1 && !m.IgnoreSegment && (proto == protoTCP || proto == protoUDP)
	backend := clbv1alpha1.BackendPodIP
	if m.HostPort {
		backend = clbv1alpha1.BackendHostPort
	}
	var out []plannedPod
	for i := m.StartIndex; i < m.EndIndex; i++ {
		n := i - m.StartIndex
		pod := plannedPod{pod: m.WorkloadName + "-" + strconv.FormatInt(i, 10)}
		first := m.StartPort + n*seg
		// The Pod's first port: the listener's own port unless
		// rsStartPort is set, then shifted per Pod unless fixed.
		rs := first
		if m.RsStartPort > 0 {
			rs = m.RsStartPort
			if !m.IsRsPortFixed {
				rs += n * seg
			}
		}
		for _, lb := range lbs {
			ports := seg
			if ranged {
				ports = 1
			}
			for k := range ports {
				end := int64(0)
				if ranged {
					end = first + seg - 1
				}
				src := &clbv1alpha1.TargetSource{Pods: []clbv1alpha1.PodBackend{{
					Name: pod.pod, Namespace: m.WorkloadNamespace, Port: rs + k, Backend: backend,
				}}}
				l := c.listener(lb, proto, first+k, end, m.ListenerAttribute, m.Certificate)
				if isLayer7(proto) {
					for _, r := range m.Routes {
						attr := r.ListenerAttribute
						if attr == nil {
							attr = m.ListenerAttribute
						}
						l.routes = append(l.routes, c.route(lb, &l, r.Domain, r.Path, attr, src))
					}
				} else {
					l.targets = c.targetSet(lb, &l, nil, src)
				}
				pod.listeners = append(pod.listeners, l)
			}
		}
		out = append(out, pod)
	}
	return out
}

// serviceSource maps bcs's services to a TargetSet source: straight to the
// Pods (isDirectConnect), to their hostPort (hostPort), else to the nodes'
// NodePort; weight.value and subsets as they are, 10 when unset.
func serviceSource(svcs []IngressService) *clbv1alpha1.TargetSource {
	if len(svcs) == 0 {
		return nil
	}
	src := &clbv1alpha1.TargetSource{}
	for _, s := range svcs {
		b := clbv1alpha1.ServiceBackend{
			Name:      s.ServiceName,
			Namespace: s.ServiceNamespace,
			Port:      intstr.FromInt32(int32(s.ServicePort)), //nolint:gosec // validated 1-65535
			Backend:   clbv1alpha1.BackendNodePort,
			Weight:    weight(s.Weight),
		}
		switch {
		case s.HostPort:
			b.Backend = clbv1alpha1.BackendHostPort
		case s.IsDirectConnect:
			b.Backend = clbv1alpha1.BackendPodIP
		}
		for _, ss := range s.Subsets {
			b.Subsets = append(b.Subsets, clbv1alpha1.WeightedSubset{LabelSelector: ss.LabelSelector, Weight: *weight(ss.Weight)})
		}
		src.Services = append(src.Services, b)
	}
	return src
}

func weight(w *IngressWeight) *int64 {
	v := int64(defaultIngressWeight)
	if w != nil {
		v = w.Value
	}
	return &v
}

func healthCheck(h *IngressHealthCheck) *clbv1alpha1.HealthCheck {
	if h == nil {
		return nil
	}
	return &clbv1alpha1.HealthCheck{
		Enabled:            h.Enabled,
		TimeoutSeconds:     h.Timeout,
		IntervalSeconds:    h.IntervalTime,
		HealthyThreshold:   h.HealthNum,
		UnhealthyThreshold: h.UnHealthNum,
		HTTPCode:           h.HTTPCode,
		HTTPCheckPath:      h.HTTPCheckPath,
		HTTPCheckMethod:    upper(h.HTTPCheckMethod),
	}
}

func upper(s *string) *string {
	if s == nil {
		return nil
	}
	u := strings.ToUpper(*s)
	return &u
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
