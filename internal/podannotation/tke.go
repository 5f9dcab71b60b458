package podannotation

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// Annotations of tke-extend-network-controller v2's per-Pod CLB mappings,
// so that its users move over without touching their workloads:
//
//	networking.cloud.tencent.com/enable-clb-port-mapping: "true"
//	networking.cloud.tencent.com/clb-port-mapping: |-
//	  8000 UDP pool-a
//	  7000 TCPUDP pool-ctcc,pool-cmcc
//	  443 TCP_SSL pool-a certSecret=my-cert
//
// with lines "<port> <PROTO> <pool>[,<pool>…] [<option>[,<option>…]]".
// TKEAnnotationEnableMapping (its "false" isolates the Pod) is in
// isolate.go.
const (
	// TKEAnnotationPortMapping lists the ports mapped to the Pod's IP.
	TKEAnnotationPortMapping = "networking.cloud.tencent.com/clb-port-mapping"
	// TKEAnnotationEnableHostPortMapping "true" asks for the ports of
	// TKEAnnotationHostPortMapping, forwarded to the node and hostPort.
	TKEAnnotationEnableHostPortMapping = "networking.cloud.tencent.com/enable-clb-hostport-mapping"
	// TKEAnnotationHostPortMapping lists, in the same lines, the ports
	// whose target is the node's IP and the container port's hostPort.
	TKEAnnotationHostPortMapping = "networking.cloud.tencent.com/clb-hostport-mapping"
	// TKEAnnotationRetain "true" keeps a deleted Pod's ports, with no time
	// limit, for a Pod of the same name.
	TKEAnnotationRetain = "networking.cloud.tencent.com/retain"

	// TKEAnnotationMappingStatus is written for Pods that use
	// TKEAnnotationPortMapping: Ready, with the result, once every port
	// is bound; never another value, as tke-extend.
	TKEAnnotationMappingStatus = "networking.cloud.tencent.com/clb-port-mapping-status"
	// TKEAnnotationMappingResult is written for those Pods: a JSON array
	// of TKEPortMapping.
	TKEAnnotationMappingResult = "networking.cloud.tencent.com/clb-port-mapping-result"
	// TKEAnnotationHostPortMappingStatus is written for Pods that use
	// TKEAnnotationHostPortMapping: Ready, as TKEAnnotationMappingStatus.
	TKEAnnotationHostPortMappingStatus = "networking.cloud.tencent.com/clb-hostport-mapping-status"
	// TKEAnnotationHostPortMappingResult is written for those Pods: a
	// JSON array of TKEHostPortMapping.
	TKEAnnotationHostPortMappingResult = "networking.cloud.tencent.com/clb-hostport-mapping-result"
)

// SyntaxTKEExtend is the Syntax of a request made with
// tke-extend-network-controller's port mapping annotations.
const SyntaxTKEExtend = "tke-extend"

// TKEPoolNamespace is where a pool named the tke-extend way ("pool-a", a
// cluster-scoped CLBPortPool there) is looked for: PortPool pool-a of
// this namespace. It serves a Pod of another namespace only by its
// spec.consumers, as any pool does. "namespace/name" names a PortPool
// of another namespace instead.
const TKEPoolNamespace = clbv1alpha1.TKEPoolNamespace

// tkeOptionSamePort and tkeOptionCertSecret are the options of a line.
const (
	tkeOptionSamePort   = "useSamePortAcrossPools"
	tkeOptionCertSecret = "certSecret"
)

// tkeRequested reports whether the Pod asks in tke-extend's syntax: with
// enable-clb-port-mapping "true", or "false" (isolated, still holding its
// ports), and the mapping lines; with enable-clb-hostport-mapping "true"
// and the hostPort lines. Any other switch value leaves the annotations
// to nobody, as tke-extend does. enable-clb-port-mapping "true" without
// its lines is returned as switchOnly: an error for a Pod that asks in no
// other syntax, and only the isolation switch for one that does.
// enable-clb-hostport-mapping "true" without lines asks for no port of
// its own: the Pod is told the addresses of its hostPorts on its Node's
// listeners (TKENodeHostPorts), which hold no slot for it.
func tkeRequested(a map[string]string) (ports, hostPorts bool, switchOnly string) {
	enable := strings.TrimSpace(a[TKEAnnotationEnableMapping])
	_, lines := a[TKEAnnotationPortMapping]
	on := strings.EqualFold(enable, "true")
	ports = lines && (on || strings.EqualFold(enable, "false"))
	if on && !lines {
		switchOnly = TKEAnnotationEnableMapping
	}
	_, hostLines := a[TKEAnnotationHostPortMapping]
	hostPorts = hostLines && strings.EqualFold(strings.TrimSpace(a[TKEAnnotationEnableHostPortMapping]), "true")
	return ports, hostPorts, switchOnly
}

// tkeMissingLines is the error of enable-clb-port-mapping "true" without
// its lines.
func tkeMissingLines() error {
	return fmt.Errorf("%s is \"true\" but %s is missing: list the ports, e.g. \"8000 UDP my-pool\"", TKEAnnotationEnableMapping, TKEAnnotationPortMapping)
}

// parseTKE reads the mapping lines of a Pod that asks in tke-extend's
// syntax into req: those of TKEAnnotationPortMapping with the PodIP
// backend, those of TKEAnnotationHostPortMapping marked HostPort.
func parseTKE(req *Request, a map[string]string, ports, hostPorts bool) error {
	if _, ok := a[AnnotationBackend]; ok {
		return fmt.Errorf("%s cannot be used with %s: the annotation chooses the backend, %s forwards to the Pod IP and %s to the node and the container port's hostPort",
			AnnotationBackend, TKEAnnotationPortMapping, TKEAnnotationPortMapping, TKEAnnotationHostPortMapping)
	}
	if ports {
		if err := parseItems(req, TKEAnnotationPortMapping, a[TKEAnnotationPortMapping], TKEPoolNamespace, parseTKEItem(false)); err != nil {
			return err
		}
	}
	if !hostPorts {
		return nil
	}
	v := a[TKEAnnotationHostPortMapping]
	first := len(req.Ports)
	hostReq := &Request{}
	if err := parseItems(hostReq, TKEAnnotationHostPortMapping, v, TKEPoolNamespace, parseTKEItem(true)); err != nil {
		return err
	}
	for i, pr := range hostReq.Ports {
		for j := range first {
			if req.Ports[j].Port == pr.Port && req.Ports[j].Protocol == pr.Protocol {
				return fmt.Errorf("port %s/%s is in both %s and %s: map it in one of them",
					pr.Port.String(), TKEProtocolName(pr.Protocol), TKEAnnotationPortMapping, TKEAnnotationHostPortMapping)
			}
		}
		req.Ports = append(req.Ports, pr)
		if hostReq.HostPortFor[i] {
			if req.HostPortFor == nil {
				req.HostPortFor = map[int]bool{}
			}
			req.HostPortFor[first+i] = true
		}
	}
	return nil
}

// parseTKEItem returns the parser of one line,
// "<port> <PROTO> <pool>[,<pool>…] [<option>[,<option>…]]"; hostPort
// marks the lines of TKEAnnotationHostPortMapping.
func parseTKEItem(hostPort bool) itemParser {
	return func(text string) (item, error) {
		fields := strings.Fields(text)
		if len(fields) < 3 || len(fields) > 4 {
			return item{}, fmt.Errorf("want \"<port> <protocol> <pool>[,<pool>…] [useSamePortAcrossPools][,certSecret=<secret>]\", e.g. \"8000 UDP my-pool\"")
		}
		it := item{hostPort: hostPort}
		if !isDigits(fields[0]) {
			return item{}, fmt.Errorf("port %q: want a container port number (1-65535)", fields[0])
		}
		var err error
		if it.port, err = parsePort(fields[0]); err != nil {
			return item{}, err
		}
		if it.protocol, err = parseTKEProtocol(fields[1]); err != nil {
			return item{}, err
		}
		for p := range strings.SplitSeq(fields[2], ",") {
			if p == "" {
				return item{}, fmt.Errorf("empty pool name (a stray comma?)")
			}
			ref, nsGiven := parsePoolRef(p)
			if !nsGiven {
				ref.Namespace = TKEPoolNamespace
			}
			if err := validPoolRef(ref, true, validation.IsDNS1123Subdomain); err != nil {
				return item{}, fmt.Errorf("pool %q: %w", p, err)
			}
			it.pools = append(it.pools, ref)
		}
		if len(fields) == 4 {
			if it.samePort, it.certSecret, err = checkTKEOptions(fields[3], it.protocol); err != nil {
				return item{}, err
			}
		}
		return it, nil
	}
}

// parseTKEProtocol reads tke-extend's protocol names, in any case, and
// returns ours: TCPUDP is TCP_UDP.
func parseTKEProtocol(s string) (string, error) {
	switch p := strings.ToUpper(s); p {
	case v1alpha1.ProtocolTCP, v1alpha1.ProtocolUDP, v1alpha1.ProtocolTCPSSL, v1alpha1.ProtocolQUIC:
		return p, nil
	case "TCPUDP":
		return v1alpha1.ProtocolTCPUDP, nil
	}
	return "", fmt.Errorf("protocol %q: protocol must be TCP, UDP, TCPUDP (TCP and UDP on one public port), TCP_SSL or QUIC", s)
}

// TKEProtocolName is the inverse of parseTKEProtocol.
func TKEProtocolName(p string) string {
	if p == v1alpha1.ProtocolTCPUDP {
		return "TCPUDP"
	}
	return p
}

// checkTKEOptions checks a line's options and reports whether it has
// useSamePortAcrossPools (the request's samePortAcrossPools: one public
// port in every pool of the line, with either strategy) and its
// certificate Secret, for TCP_SSL and QUIC only (the request's
// certSecret, read in the Pod's namespace by the PodAddress controller).
func checkTKEOptions(text, protocol string) (samePort bool, certSecret string, err error) {
	for opt := range strings.SplitSeq(text, ",") {
		key, value, hasValue := strings.Cut(opt, "=")
		switch {
		case key == tkeOptionSamePort && !hasValue:
			samePort = true
		case key == tkeOptionCertSecret && hasValue:
			if protocol != v1alpha1.ProtocolTCPSSL && protocol != v1alpha1.ProtocolQUIC {
				return false, "", fmt.Errorf("option %q: a certificate applies to TCP_SSL and QUIC only", opt)
			}
			if errs := validation.IsDNS1123Subdomain(value); len(errs) > 0 {
				return false, "", fmt.Errorf("option %q: invalid Secret name: %s", opt, strings.Join(errs, "; "))
			}
			if certSecret != "" && certSecret != value {
				return false, "", fmt.Errorf("option %q: the line names two certificate Secrets", opt)
			}
			certSecret = value
		default:
			return false, "", fmt.Errorf("option %q: the options are %s and %s=<secret>, separated by commas", opt, tkeOptionSamePort, tkeOptionCertSecret)
		}
	}
	return samePort, certSecret, nil
}

// TKEPoolName is a binding's pool as the Pod named it: "name" for a pool
// of TKEPoolNamespace, else "namespace/name".
func TKEPoolName(key string) string {
	nn, ok := v1alpha1.ParsePoolKey(key)
	if !ok {
		return key
	}
	if nn.Namespace == TKEPoolNamespace {
		return nn.Name
	}
	return key
}

// parseTKERetain reads TKEAnnotationRetain: "true" keeps the ports of a
// deleted Pod until its PodAddress is deleted, as tke-extend's binding
// without an owner. A keep duration beside it would say two things.
func parseTKERetain(req *Request, a map[string]string) error {
	v, ok := a[TKEAnnotationRetain]
	if !ok {
		return nil
	}
	retain, isBool := oneOf(v, "true", "false")
	if !isBool {
		return fmt.Errorf("%s %q: must be \"true\" (keep the ports for a Pod of the same name, with no time limit, once this one is deleted) or \"false\"", TKEAnnotationRetain, v)
	}
	req.Retain = retain == "true"
	if req.Retain && req.KeepDuration != nil {
		return fmt.Errorf("%s \"true\" keeps the ports with no time limit; %s cannot be used with it", TKEAnnotationRetain, AnnotationKeepDuration)
	}
	return nil
}
