package function

import (
	"fmt"
	"slices"
	"strings"
)

// ingressProtocols are the protocols a rule or port mapping may name.
func ingressProtocols() []string {
	return []string{protoTCP, protoUDP, protoHTTP, protoHTTPS, protoTCPSSL, protoQUIC}
}

// portUse is a range of listener ports a part of the spec takes.
type portUse struct {
	transport  string
	first, end int64
	what       string
}

// validateIngress refuses what the composed resources could not express,
// or what bcs refuses, naming the field. The XRD refuses most of it first;
// this holds for render, and for what a schema cannot say (ports of
// different rules and mappings that overlap).
func validateIngress(s *IngressSpec) error {
	var uses []portUse
	for i, r := range s.Rules {
		f := fmt.Sprintf("spec.rules[%d]", i)
		proto := strings.ToUpper(r.Protocol)
		if err := checkProtocol(f, proto, r.Port, r.Certificate); err != nil {
			return err
		}
		if isLayer7(proto) {
			if len(r.Services) > 0 {
				return fmt.Errorf("%s: an %s rule forwards by domain and path: put its services in layer7Routes[].services", f, proto)
			}
			seen := map[string]bool{}
			for j, rt := range r.Layer7Routes {
				g := fmt.Sprintf("%s.layer7Routes[%d]", f, j)
				if rt.Domain == "" {
					return fmt.Errorf("%s.domain is required", g)
				}
				k := rt.Domain + " " + orSlash(rt.Path)
				if seen[k] {
					return fmt.Errorf("%s: domain %s path %s is routed twice", g, rt.Domain, orSlash(rt.Path))
				}
				seen[k] = true
				if err := checkServices(g, rt.Services); err != nil {
					return err
				}
			}
		} else {
			if len(r.Layer7Routes) > 0 {
				return fmt.Errorf("%s: layer7Routes apply to HTTP and HTTPS rules only, not %s", f, proto)
			}
			if err := checkServices(f, r.Services); err != nil {
				return err
			}
		}
		uses = append(uses, portUse{transport(proto), r.Port, r.Port, fmt.Sprintf("%s (%s %d)", f, proto, r.Port)})
	}
	for i, m := range s.PortMappings {
		f := fmt.Sprintf("spec.portMappings[%d]", i)
		proto := strings.ToUpper(m.Protocol)
		if err := checkProtocol(f, proto, m.StartPort, m.Certificate); err != nil {
			return err
		}
		if m.StartIndex < 0 || m.EndIndex <= m.StartIndex {
			return fmt.Errorf("%s: endIndex %d must be greater than startIndex %d ([startIndex, endIndex) is half-open: the Pods startIndex … endIndex-1)", f, m.EndIndex, m.StartIndex)
		}
		if m.SegmentLength < 0 {
			return fmt.Errorf("%s.segmentLength %d must not be negative", f, m.SegmentLength)
		}
		switch strings.ToLower(m.WorkloadKind) {
		case "statefulset", "gamestatefulset":
		default:
			return fmt.Errorf("%s.workloadKind %q: want StatefulSet or GameStatefulSet", f, m.WorkloadKind)
		}
		if m.WorkloadName == "" {
			return fmt.Errorf("%s.workloadName is required", f)
		}
		seg := max(m.SegmentLength, 1)
		last := m.StartPort + (m.EndIndex-m.StartIndex)*seg - 1
		if last > 65535 {
			return fmt.Errorf("%s: %d Pods × %d ports from %d end at %d, beyond 65535", f, m.EndIndex-m.StartIndex, seg, m.StartPort, last)
		}
		if m.EndPort != nil && last > *m.EndPort {
			return fmt.Errorf("%s: %d Pods × %d ports from %d end at %d, beyond endPort %d", f, m.EndIndex-m.StartIndex, seg, m.StartPort, last, *m.EndPort)
		}
		if m.RsStartPort < 0 || m.RsStartPort > 0 && m.RsStartPort+seg-1+rsShift(m, seg) > 65535 {
			return fmt.Errorf("%s.rsStartPort %d: the Pods' ports would end beyond 65535", f, m.RsStartPort)
		}
		if m.HostPort && seg > 1 && !m.IgnoreSegment {
			return fmt.Errorf("%s: hostPort with segmentLength %d needs ignoreSegment: true (one listener per port, each to its own hostPort)", f, seg)
		}
		if isLayer7(proto) && len(m.Routes) == 0 {
			return fmt.Errorf("%s: an %s port mapping needs routes (domain and path of each Pod's listener)", f, proto)
		}
		if !isLayer7(proto) && len(m.Routes) > 0 {
			return fmt.Errorf("%s: routes apply to HTTP and HTTPS port mappings only, not %s", f, proto)
		}
		for j, r := range m.Routes {
			if r.Domain == "" {
				return fmt.Errorf("%s.routes[%d].domain is required", f, j)
			}
		}
		uses = append(uses, portUse{transport(proto), m.StartPort, last, fmt.Sprintf("%s (%s %d-%d)", f, proto, m.StartPort, last)})
	}
	for i, a := range uses {
		for _, b := range uses[:i] {
			if a.transport == b.transport && a.first <= b.end && b.first <= a.end {
				return fmt.Errorf("%s conflicts with %s: a load balancer has one %s listener per port", a.what, b.what, a.transport)
			}
		}
	}
	return nil
}

// rsShift is how far the last Pod's ports are shifted from rsStartPort.
func rsShift(m IngressPortMapping, seg int64) int64 {
	if m.IsRsPortFixed {
		return 0
	}
	return (m.EndIndex - m.StartIndex - 1) * seg
}

func checkProtocol(f, proto string, port int64, cert *IngressListenerCertificate) error {
	if !slices.Contains(ingressProtocols(), proto) {
		return fmt.Errorf("%s.protocol %q: want one of %s", f, proto, strings.Join(ingressProtocols(), ", "))
	}
	if port < 1 || port > 65535 {
		return fmt.Errorf("%s: port %d is not within 1-65535", f, port)
	}
	if needsCertificate(proto) && cert == nil {
		return fmt.Errorf("%s: an %s listener needs a certificate (certificate.certID)", f, proto)
	}
	if cert != nil {
		if !needsCertificate(proto) {
			return fmt.Errorf("%s: certificate applies to HTTPS, TCP_SSL and QUIC only, not %s", f, proto)
		}
		mode := strings.ToUpper(cert.Mode)
		if mode != "" && mode != "UNIDIRECTIONAL" && mode != "MUTUAL" {
			return fmt.Errorf("%s.certificate.mode %q: want UNIDIRECTIONAL or MUTUAL", f, cert.Mode)
		}
		if cert.CertID == "" {
			return fmt.Errorf("%s.certificate.certID is required", f)
		}
		if mode == "MUTUAL" && cert.CertCaID == "" {
			return fmt.Errorf("%s.certificate: mode MUTUAL needs certCaID, the client CA certificate", f)
		}
	}
	return nil
}

func checkServices(f string, svcs []IngressService) error {
	for i, s := range svcs {
		g := fmt.Sprintf("%s.services[%d]", f, i)
		if s.ServiceName == "" {
			return fmt.Errorf("%s.serviceName is required", g)
		}
		if s.ServicePort < 1 || s.ServicePort > 65535 {
			return fmt.Errorf("%s.servicePort %d is not within 1-65535", g, s.ServicePort)
		}
		if w := s.Weight; w != nil && (w.Value < 0 || w.Value > 100) {
			return fmt.Errorf("%s.weight.value %d is not within 0-100", g, w.Value)
		}
		for j, ss := range s.Subsets {
			if len(ss.LabelSelector) == 0 {
				return fmt.Errorf("%s.subsets[%d].labelSelector needs at least one label", g, j)
			}
			if w := ss.Weight; w != nil && (w.Value < 0 || w.Value > 100) {
				return fmt.Errorf("%s.subsets[%d].weight.value %d is not within 0-100", g, j, w.Value)
			}
		}
	}
	return nil
}

func orSlash(p string) string {
	if p == "" {
		return "/"
	}
	return p
}
