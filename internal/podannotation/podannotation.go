// Package podannotation reads what a Pod asks for in its annotations (public
// addresses for container ports, from PortPools) and writes what it is told
// back (its addresses and whether they are bound).
//
// Two syntaxes are understood. Ours:
//
//	network.tencentcloud.crossplane.io/ports: "8000/TCP_UDP pool-ctcc,pool-cmcc; voice/UDP relays/pool-a"
//
// items separated by ";" or newlines, each "<port>[/<protocol>] <pool>[,<pool>…]"
// where port is a container port number or name and a pool is "name" or
// "namespace/name". And the bcs-ingress-controller one, so that its users
// can move over without touching their workloads:
//
//	portpools.networkextension.bkbcs.tencent.com: "true"
//	ports.portpools.networkextension.bkbcs.tencent.com: "pool.ns TCP 8000"
//
// with items "<pool>[.<namespace>] [<protocol>] <port>[/hostport]".
package podannotation

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// Annotations of our syntax.
const (
	// AnnotationPorts lists the ports that get public addresses.
	AnnotationPorts = "network.tencentcloud.crossplane.io/ports"
	// AnnotationStrategy is Dynamic (default) or Ordinal.
	AnnotationStrategy = "network.tencentcloud.crossplane.io/strategy"
	// AnnotationKeepDuration is a Go duration ("5m", "2h45m") for which a
	// deleted Pod's addresses wait for a new Pod of the same name.
	AnnotationKeepDuration = "network.tencentcloud.crossplane.io/keep-duration"
	// AnnotationBackend is PodIP (default), HostPort or NodePort.
	AnnotationBackend = "network.tencentcloud.crossplane.io/backend"
	// AnnotationReadinessGate "true" keeps the Pod NotReady until its
	// addresses are bound (with ConditionAddressReady in its readiness
	// gates).
	AnnotationReadinessGate = "network.tencentcloud.crossplane.io/readiness-gate"

	// AnnotationAddresses is written by the provider: a JSON array of
	// Address.
	AnnotationAddresses = "network.tencentcloud.crossplane.io/addresses"
	// AnnotationStatus is written by the provider: StatusReady once every
	// address forwards to the Pod, StatusNotReady before.
	AnnotationStatus = "network.tencentcloud.crossplane.io/status"

	// ConditionAddressReady is the Pod condition (and readiness gate) that
	// is True once every address forwards to the Pod.
	ConditionAddressReady = "network.tencentcloud.crossplane.io/address-ready"
)

// Annotations of the bcs-ingress-controller syntax.
const (
	// BCSAnnotationEnabled "true" opts the Pod in.
	BCSAnnotationEnabled = "portpools.networkextension.bkbcs.tencent.com"
	// BCSAnnotationPorts lists the ports.
	BCSAnnotationPorts = "ports.portpools.networkextension.bkbcs.tencent.com"
	// BCSAnnotationKeepDuration is the keep duration.
	BCSAnnotationKeepDuration = "keepduration.portbinding.bkbcs.tencent.com"
	// BCSAnnotationReadinessGate, when present, asks for a readiness gate.
	BCSAnnotationReadinessGate = "readinessgate.portpools.networkextension.bkbcs.tencent.com"

	// BCSAnnotationBindings is written for bcs-syntax Pods: a JSON array
	// of BCSBinding, the shape bcs applications already read.
	BCSAnnotationBindings = "poolbindings.portpool.networkextension.bkbcs.tencent.com"
	// BCSAnnotationStatus is written for bcs-syntax Pods: Ready or
	// NotReady.
	BCSAnnotationStatus = "status.portpools.networkextension.bkbcs.tencent.com"

	// BCSConditionPortBindingReady is the readiness gate bcs put on Pods.
	// Pods created while bcs was in charge carry it; setting it as well
	// lets them become Ready after the move.
	BCSConditionPortBindingReady = "networkextension.bkbcs.tencent.com/portbinding-ready"
)

// Syntaxes a Request came from.
const (
	SyntaxNative = "native"
	SyntaxBCS    = "bcs"
)

// Values of the status annotations.
const (
	StatusReady    = "Ready"
	StatusNotReady = "NotReady"
)

// A Request is what a Pod asked for.
type Request struct {
	// Ports in the order first written; lines naming the same port and
	// protocol are merged into one request with several pools.
	Ports []v1alpha1.PortRequest
	// Strategy is StrategyDynamic or StrategyOrdinal.
	Strategy string
	// Backend is BackendPodIP, BackendHostPort or BackendNodePort.
	Backend string
	// KeepDuration, if set, keeps a deleted Pod's addresses for a new Pod
	// of the same name.
	KeepDuration *metav1.Duration
	// Retain keeps them with no time limit (tke-extend syntax only).
	Retain bool
	// ReadinessGate asks that the Pod stay NotReady until bound.
	ReadinessGate bool
	// Syntax is SyntaxNative or SyntaxBCS.
	Syntax string
	// EIP, when set, asks for an elastic public IP instead of ports.
	EIP *v1alpha1.EIPRequest
	// HostPortFor marks, by index into Ports, requests written
	// "<port>/hostport" (bcs): their target is the node and the container
	// port's hostPort, whatever Backend says. Nil when there are none.
	HostPortFor map[int]bool
}

// BackendFor returns the backend of Ports[i].
func (r *Request) BackendFor(i int) string {
	if r.HostPortFor[i] {
		return v1alpha1.BackendHostPort
	}
	return r.Backend
}

// Parse reads the Pod's request. asked is false when the Pod uses neither
// syntax. Errors quote the offending annotation or item and say what is
// expected; they are meant for the Pod's owner (an Event, a status
// message).
//
// Our annotations other than the ports list (strategy, backend,
// keep-duration, readiness-gate) also apply to a bcs-syntax Pod and win
// over their bcs counterparts.
func Parse(pod *corev1.Pod) (req *Request, asked bool, err error) {
	a := pod.GetAnnotations()
	_, nativePorts := a[AnnotationPorts]
	eipValue, eip := a[AnnotationEIP]
	tkeAttrs, tke := a[TKEAnnotationEIPAttributes]
	native := nativePorts || eip
	for _, k := range []string{AnnotationStrategy, AnnotationKeepDuration, AnnotationBackend, AnnotationReadinessGate} {
		if _, ok := a[k]; ok {
			native = true
		}
	}
	// bcs acts only on "true"; the other bcs annotations alone do nothing.
	bcs := strings.EqualFold(strings.TrimSpace(a[BCSAnnotationEnabled]), "true")
	tkePorts, tkeHostPorts, tkeSwitchOnly := tkeRequested(a)
	tkeExtend := tkePorts || tkeHostPorts
	if !native && !bcs && !tke && !tkeExtend {
		if tkeSwitchOnly != "" {
			return nil, true, tkeMissingLines()
		}
		return nil, false, nil
	}

	req = &Request{Strategy: v1alpha1.StrategyDynamic, Backend: v1alpha1.BackendPodIP}
	switch {
	case tkeExtend && (nativePorts || bcs || eip || tke):
		return nil, true, fmt.Errorf("%s asks for ports beside %s: use one syntax", tkeSwitch(tkePorts), otherSyntax(nativePorts, bcs, eip))
	case (eip || tke) && (nativePorts || bcs):
		return nil, true, fmt.Errorf("an EIP (%s or %s) and ports are both asked for: ask for one of them", AnnotationEIP, TKEAnnotationEIPAttributes)
	case eip && tke:
		return nil, true, fmt.Errorf("both %s and %s ask for an EIP: use one syntax", AnnotationEIP, TKEAnnotationEIPAttributes)
	case eip:
		req.Syntax = SyntaxNative
		req.EIP, err = parseEIP(eipValue)
	case tke:
		req.Syntax = SyntaxTKE
		policy, hasPolicy := a[TKEAnnotationEIPClaimDeletePolicy]
		req.EIP, err = parseTKEEIP(tkeAttrs, policy, hasPolicy)
	case nativePorts && bcs:
		return nil, true, fmt.Errorf("both %s and %s=true ask for ports: use one syntax", AnnotationPorts, BCSAnnotationEnabled)
	case nativePorts:
		req.Syntax = SyntaxNative
		err = parseItems(req, AnnotationPorts, a[AnnotationPorts], pod.GetNamespace(), parseNativeItem)
	case bcs:
		req.Syntax = SyntaxBCS
		v, ok := a[BCSAnnotationPorts]
		if !ok {
			return nil, true, fmt.Errorf("%s is \"true\" but %s is missing: list the ports, e.g. \"my-pool TCP 8000\"", BCSAnnotationEnabled, BCSAnnotationPorts)
		}
		err = parseItems(req, BCSAnnotationPorts, v, pod.GetNamespace(), parseBCSItem)
	case tkeExtend && tkeSwitchOnly != "":
		return nil, true, tkeMissingLines()
	case tkeExtend:
		req.Syntax = SyntaxTKEExtend
		err = parseTKE(req, a, tkePorts, tkeHostPorts)
	default:
		return nil, true, fmt.Errorf("%s is missing: the other %s annotations need it, e.g. \"8000/TCP my-pool\"",
			AnnotationPorts, "network.tencentcloud.crossplane.io")
	}
	if err != nil {
		return nil, true, err
	}
	if err := parseOptions(req, a); err != nil {
		return nil, true, err
	}
	if req.Syntax == SyntaxTKEExtend {
		if err := parseTKERetain(req, a); err != nil {
			return nil, true, err
		}
	}
	return req, true, nil
}

// tkeSwitch names the tke-extend annotation that turned its syntax on.
func tkeSwitch(ports bool) string {
	if ports {
		return TKEAnnotationEnableMapping
	}
	return TKEAnnotationEnableHostPortMapping
}

// otherSyntax names the annotation of the other syntax a Pod asks with.
func otherSyntax(nativePorts, bcs, eip bool) string {
	switch {
	case nativePorts:
		return AnnotationPorts
	case bcs:
		return BCSAnnotationEnabled + "=true"
	case eip:
		return AnnotationEIP
	}
	return TKEAnnotationEIPAttributes
}

// item is one parsed line of either syntax.
type item struct {
	port     intstr.IntOrString
	protocol string // canonical, or "" for the container port's
	pools    []v1alpha1.PoolRef
	hostPort bool
	// samePort: one public port in every pool (tke-extend's
	// useSamePortAcrossPools).
	samePort bool
	// certSecret: the Secret of the certificate (tke-extend's certSecret).
	certSecret string
}

type itemParser func(text string) (item, error)

// parseItems splits value into items, parses each and merges those for the
// same port and protocol.
func parseItems(req *Request, key, value, podNS string, parse itemParser) error {
	type mergeKey struct{ port, protocol string }
	index := map[mergeKey]int{}
	n := 0
	for _, raw := range strings.FieldsFunc(value, func(r rune) bool { return r == ';' || r == '\n' || r == '\r' }) {
		text := strings.TrimSpace(raw)
		if text == "" {
			continue
		}
		n++
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s item %d %q: %s", key, n, text, fmt.Sprintf(format, args...))
		}
		it, err := parse(text)
		if err != nil {
			return bad("%s", err.Error())
		}
		k := mergeKey{it.port.String(), it.protocol}
		i, seen := index[k]
		if !seen {
			index[k] = len(req.Ports)
			req.Ports = append(req.Ports, v1alpha1.PortRequest{Port: it.port, Protocol: it.protocol, Pools: it.pools, SamePortAcrossPools: it.samePort, CertSecret: it.certSecret})
			if it.hostPort {
				if req.HostPortFor == nil {
					req.HostPortFor = map[int]bool{}
				}
				req.HostPortFor[len(req.Ports)-1] = true
			}
			continue
		}
		if req.HostPortFor[i] != it.hostPort {
			return bad("port %s is listed both with and without /hostport; use the same form on every line", describe(it))
		}
		if req.Ports[i].SamePortAcrossPools != it.samePort {
			return bad("port %s is listed both with and without useSamePortAcrossPools; a port's lines are one request: list its pools on one line, or give every line the option", describe(it))
		}
		if req.Ports[i].CertSecret != it.certSecret {
			return bad("port %s is listed with different certSecret options; a port's listeners take one certificate: give every line the same one", describe(it))
		}
		for _, pool := range it.pools {
			for _, have := range req.Ports[i].Pools {
				if samePool(have, pool, podNS) {
					return bad("pool %s is already listed for port %s", poolString(pool), describe(it))
				}
			}
			req.Ports[i].Pools = append(req.Ports[i].Pools, pool)
		}
	}
	if n == 0 {
		return fmt.Errorf("%s lists no ports", key)
	}
	// Every pool of one item must differ too (native "a,a").
	for _, pr := range req.Ports {
		for i := range pr.Pools {
			for j := range i {
				if samePool(pr.Pools[i], pr.Pools[j], podNS) {
					return fmt.Errorf("%s: pool %s is listed twice for port %s", key, poolString(pr.Pools[i]), pr.Port.String())
				}
			}
		}
	}
	return nil
}

func describe(it item) string {
	if it.protocol == "" {
		return it.port.String()
	}
	return it.port.String() + "/" + it.protocol
}

func samePool(a, b v1alpha1.PoolRef, podNS string) bool {
	ns := func(p v1alpha1.PoolRef) string {
		if p.Namespace == "" {
			return podNS
		}
		return p.Namespace
	}
	return a.Name == b.Name && ns(a) == ns(b)
}

// parsePoolRef parses a pool as annotations name it, the inverse of
// poolString: "namespace/name", or "name" in the Pod's namespace.
func parsePoolRef(s string) (ref v1alpha1.PoolRef, nsGiven bool) {
	if ns, name, ok := strings.Cut(s, "/"); ok {
		return v1alpha1.PoolRef{Namespace: ns, Name: name}, true
	}
	return v1alpha1.PoolRef{Name: s}, false
}

func poolString(p v1alpha1.PoolRef) string {
	if p.Namespace == "" {
		return p.Name
	}
	return p.Namespace + "/" + p.Name
}

// parseNativeItem parses "<port>[/<protocol>] <pool>[,<pool>…]". Spaces
// after the commas are allowed.
func parseNativeItem(text string) (item, error) {
	fields := strings.Fields(text)
	if len(fields) < 2 {
		return item{}, fmt.Errorf("want \"<port>[/<protocol>] <pool>[,<pool>…]\", e.g. \"8000/UDP my-pool\"")
	}
	var it item
	portText, proto, hasProto := strings.Cut(fields[0], "/")
	if strings.Contains(proto, "/") {
		return item{}, fmt.Errorf("%q has more than one \"/\": want <port>[/<protocol>]", fields[0])
	}
	var err error
	if it.port, err = parsePort(portText); err != nil {
		return item{}, err
	}
	if hasProto {
		if it.protocol, err = parseProtocol(proto); err != nil {
			return item{}, err
		}
	}
	for p := range strings.SplitSeq(strings.Join(fields[1:], " "), ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return item{}, fmt.Errorf("empty pool name (a stray comma?)")
		}
		if strings.ContainsAny(p, " \t") {
			return item{}, fmt.Errorf("pool %q: separate pools with commas, not spaces", p)
		}
		ref, nsGiven := parsePoolRef(p)
		if err := validPoolRef(ref, nsGiven, validation.IsDNS1123Subdomain); err != nil {
			return item{}, fmt.Errorf("pool %q: %w", p, err)
		}
		it.pools = append(it.pools, ref)
	}
	return it, nil
}

// parseBCSItem parses "<pool>[.<namespace>] [<protocol>] <port>[/hostport]".
func parseBCSItem(text string) (item, error) {
	fields := strings.Fields(text)
	var poolText, proto, portText string
	switch len(fields) {
	case 2:
		poolText, portText = fields[0], fields[1]
	case 3:
		poolText, proto, portText = fields[0], fields[1], fields[2]
	default:
		return item{}, fmt.Errorf("want \"<pool>[.<namespace>] [<protocol>] <port>[/hostport]\", e.g. \"my-pool TCP 8000\"")
	}
	var it item
	if strings.Contains(poolText, "/") {
		return item{}, fmt.Errorf("pool %q: choosing a pool item (\"pool/item\") is not supported; give those load balancers a PortPool of their own", poolText)
	}
	ref := v1alpha1.PoolRef{Name: poolText}
	name, ns, nsGiven := strings.Cut(poolText, ".")
	if nsGiven {
		if strings.Contains(ns, ".") {
			return item{}, fmt.Errorf("pool %q: want <pool> or <pool>.<namespace>, with one dot", poolText)
		}
		ref = v1alpha1.PoolRef{Name: name, Namespace: ns}
	}
	// The dot separates the namespace, so a pool name here cannot have one.
	if err := validPoolRef(ref, nsGiven, validation.IsDNS1123Label); err != nil {
		return item{}, fmt.Errorf("pool %q: %w", poolText, err)
	}
	it.pools = []v1alpha1.PoolRef{ref}
	var err error
	if proto != "" {
		if it.protocol, err = parseProtocol(proto); err != nil {
			return item{}, err
		}
	}
	portText, suffix, hasSuffix := strings.Cut(portText, "/")
	if hasSuffix {
		if !strings.EqualFold(suffix, "hostport") {
			return item{}, fmt.Errorf("port suffix %q: the only suffix is /hostport", "/"+suffix)
		}
		it.hostPort = true
	}
	if it.port, err = parsePort(portText); err != nil {
		return item{}, err
	}
	return it, nil
}

// parsePort reads a container port number or name.
func parsePort(s string) (intstr.IntOrString, error) {
	if s == "" {
		return intstr.IntOrString{}, fmt.Errorf("missing port: want a container port number or name")
	}
	if isDigits(s) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 65535 {
			return intstr.IntOrString{}, fmt.Errorf("port %s: a port number must be 1-65535", s)
		}
		return intstr.FromInt32(int32(n)), nil
	}
	if errs := validation.IsValidPortName(s); len(errs) > 0 {
		return intstr.IntOrString{}, fmt.Errorf("port %q is neither a number nor a valid port name (%s)", s, strings.Join(errs, "; "))
	}
	return intstr.FromString(s), nil
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// parseProtocol accepts a protocol in any case and returns it canonical.
func parseProtocol(s string) (string, error) {
	if p, ok := canonicalProtocol(s); ok {
		return p, nil
	}
	return "", fmt.Errorf("protocol %q: protocol must be TCP, UDP, TCP_UDP, TCP_SSL or QUIC", s)
}

func canonicalProtocol(s string) (string, bool) {
	switch p := strings.ToUpper(s); p {
	case v1alpha1.ProtocolTCP, v1alpha1.ProtocolUDP, v1alpha1.ProtocolTCPUDP, v1alpha1.ProtocolTCPSSL, v1alpha1.ProtocolQUIC:
		return p, true
	}
	return "", false
}

// validPoolRef checks a pool reference; nsGiven says a namespace was
// written (and so must not be empty).
func validPoolRef(ref v1alpha1.PoolRef, nsGiven bool, nameRule func(string) []string) error {
	if ref.Name == "" {
		return fmt.Errorf("empty pool name")
	}
	if errs := nameRule(ref.Name); len(errs) > 0 {
		return fmt.Errorf("invalid pool name: %s", strings.Join(errs, "; "))
	}
	if !nsGiven {
		return nil
	}
	if ref.Namespace == "" {
		return fmt.Errorf("empty namespace")
	}
	if errs := validation.IsDNS1123Label(ref.Namespace); len(errs) > 0 {
		return fmt.Errorf("invalid namespace: %s", strings.Join(errs, "; "))
	}
	return nil
}

// parseOptions reads strategy, backend, keep duration and readiness gate.
func parseOptions(req *Request, a map[string]string) error {
	if v, ok := a[AnnotationStrategy]; ok {
		s, ok := oneOf(v, v1alpha1.StrategyDynamic, v1alpha1.StrategyOrdinal)
		if !ok {
			return fmt.Errorf("%s %q: must be Dynamic or Ordinal", AnnotationStrategy, v)
		}
		req.Strategy = s
	}
	backend, explicit := a[AnnotationBackend]
	if explicit {
		b, ok := oneOf(backend, v1alpha1.BackendPodIP, v1alpha1.BackendHostPort, v1alpha1.BackendNodePort)
		if !ok {
			return fmt.Errorf("%s %q: must be PodIP, HostPort or NodePort", AnnotationBackend, backend)
		}
		req.Backend = b
	} else if len(req.HostPortFor) > 0 && len(req.HostPortFor) == len(req.Ports) {
		// Every port says /hostport: that is the Pod's backend.
		req.Backend = v1alpha1.BackendHostPort
	}

	keyKeep := AnnotationKeepDuration
	keep, ok := a[keyKeep]
	if !ok && req.Syntax == SyntaxBCS {
		keyKeep = BCSAnnotationKeepDuration
		keep, ok = a[keyKeep]
	}
	if ok {
		d, err := time.ParseDuration(strings.TrimSpace(keep))
		if err != nil || d < 0 {
			return fmt.Errorf("%s %q: want a non-negative duration such as \"5m\" or \"2h45m\" (units ns, us, ms, s, m, h)", keyKeep, keep)
		}
		req.KeepDuration = &metav1.Duration{Duration: d}
	}

	if v, ok := a[AnnotationReadinessGate]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%s %q: must be \"true\" or \"false\"", AnnotationReadinessGate, v)
		}
		req.ReadinessGate = b
	} else if v, ok := a[BCSAnnotationReadinessGate]; ok && req.Syntax == SyntaxBCS {
		// bcs looks only at presence; an explicit "false" is honoured as
		// the obvious intent.
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		req.ReadinessGate = err != nil || b
	}
	return nil
}

// oneOf matches v against values ignoring case and surrounding space, and
// returns the canonical spelling.
func oneOf(v string, values ...string) (string, bool) {
	v = strings.TrimSpace(v)
	for _, c := range values {
		if strings.EqualFold(v, c) {
			return c, true
		}
	}
	return "", false
}
