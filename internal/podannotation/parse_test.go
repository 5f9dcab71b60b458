package podannotation

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

func pod(annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "room-0", Namespace: "game", Annotations: annotations}}
}

func num(n int32) intstr.IntOrString   { return intstr.FromInt32(n) }
func name(s string) intstr.IntOrString { return intstr.FromString(s) }
func pools(names ...string) []v1alpha1.PoolRef {
	out := make([]v1alpha1.PoolRef, 0, len(names))
	for _, n := range names {
		out = append(out, v1alpha1.PoolRef{Name: n})
	}
	return out
}
func nsPool(ns, n string) v1alpha1.PoolRef { return v1alpha1.PoolRef{Namespace: ns, Name: n} }

// request fills the defaults a parsed request has.
func request(syntax string, ports ...v1alpha1.PortRequest) *Request {
	return &Request{Ports: ports, Strategy: v1alpha1.StrategyDynamic, Backend: v1alpha1.BackendPodIP, Syntax: syntax}
}

func with(r *Request, f func(*Request)) *Request { f(r); return r }

func bcsOn(ports string) map[string]string {
	return map[string]string{BCSAnnotationEnabled: "true", BCSAnnotationPorts: ports}
}

func TestParse(t *testing.T) {
	type want struct {
		req   *Request
		asked bool
		err   string
	}
	cases := map[string]struct {
		reason      string
		annotations map[string]string
		want        want
	}{
		// Not asked.
		"NoAnnotations": {
			reason: "a Pod without annotations asks for nothing",
		},
		"UnrelatedAnnotations": {
			reason:      "other annotations are not a request",
			annotations: map[string]string{"example.com/ports": "8000 a"},
		},
		"BCSDisabled": {
			reason:      "bcs acts only when its switch is \"true\"",
			annotations: map[string]string{BCSAnnotationEnabled: "false", BCSAnnotationPorts: "a TCP 8000"},
		},
		"BCSPortsWithoutSwitch": {
			reason:      "the bcs ports annotation alone does nothing, as with bcs",
			annotations: map[string]string{BCSAnnotationPorts: "a TCP 8000", BCSAnnotationKeepDuration: "5m"},
		},

		// Our syntax.
		"NativeMinimal": {
			reason:      "a port number and a pool; protocol left to the container",
			annotations: map[string]string{AnnotationPorts: "8000 pool-a"},
			want: want{asked: true, req: request(SyntaxNative,
				v1alpha1.PortRequest{Port: num(8000), Pools: pools("pool-a")})},
		},
		"NativeDocumentedExample": {
			reason:      "several pools for one port (one address per ISP), a named port, a namespaced pool",
			annotations: map[string]string{AnnotationPorts: "8000/TCP_UDP pool-ctcc,pool-cmcc; voice/UDP relays/pool-a"},
			want: want{asked: true, req: request(SyntaxNative,
				v1alpha1.PortRequest{Port: num(8000), Protocol: "TCP_UDP", Pools: pools("pool-ctcc", "pool-cmcc")},
				v1alpha1.PortRequest{Port: name("voice"), Protocol: "UDP", Pools: []v1alpha1.PoolRef{nsPool("relays", "pool-a")}})},
		},
		"NativeLooseLayout": {
			reason:      "newlines, blank items, spaces after commas and lower-case protocols are accepted; dotted pool names are fine",
			annotations: map[string]string{AnnotationPorts: "\n  8000/tcp pool-a, pool.b \n\n; 9000/quic  other/p ;\r\n"},
			want: want{asked: true, req: request(SyntaxNative,
				v1alpha1.PortRequest{Port: num(8000), Protocol: "TCP", Pools: pools("pool-a", "pool.b")},
				v1alpha1.PortRequest{Port: num(9000), Protocol: "QUIC", Pools: []v1alpha1.PoolRef{nsPool("other", "p")}})},
		},
		"NativeMerge": {
			reason:      "items for the same port and protocol merge, keeping pool order",
			annotations: map[string]string{AnnotationPorts: "8000/UDP b\n9000 c\n8000/UDP a"},
			want: want{asked: true, req: request(SyntaxNative,
				v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: pools("b", "a")},
				v1alpha1.PortRequest{Port: num(9000), Pools: pools("c")})},
		},
		"NativeNoMergeAcrossProtocols": {
			reason:      "the same port with another protocol is another request",
			annotations: map[string]string{AnnotationPorts: "8000/TCP a; 8000/UDP a"},
			want: want{asked: true, req: request(SyntaxNative,
				v1alpha1.PortRequest{Port: num(8000), Protocol: "TCP", Pools: pools("a")},
				v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: pools("a")})},
		},
		"NativeOptions": {
			reason: "strategy, backend, keep-duration and readiness-gate, in any case",
			annotations: map[string]string{AnnotationPorts: "8000 a", AnnotationStrategy: "ordinal", AnnotationBackend: " nodeport",
				AnnotationKeepDuration: "2h45m", AnnotationReadinessGate: "true"},
			want: want{asked: true, req: with(request(SyntaxNative, v1alpha1.PortRequest{Port: num(8000), Pools: pools("a")}), func(r *Request) {
				r.Strategy, r.Backend = v1alpha1.StrategyOrdinal, v1alpha1.BackendNodePort
				r.KeepDuration = &metav1.Duration{Duration: 2*time.Hour + 45*time.Minute}
				r.ReadinessGate = true
			})},
		},

		// bcs syntax.
		"BCSSimple": {
			reason:      "pool, protocol, port",
			annotations: bcsOn("test-pool1 TCP 80"),
			want: want{asked: true, req: request(SyntaxBCS,
				v1alpha1.PortRequest{Port: num(80), Protocol: "TCP", Pools: pools("test-pool1")})},
		},
		"BCSSwitchAnyCase": {
			reason:      "the switch is read case-insensitively",
			annotations: map[string]string{BCSAnnotationEnabled: " True", BCSAnnotationPorts: "a UDP 80"},
			want: want{asked: true, req: request(SyntaxBCS,
				v1alpha1.PortRequest{Port: num(80), Protocol: "UDP", Pools: pools("a")})},
		},
		"BCSNamespaceAfterDot": {
			reason:      "pool.ns names the pool's namespace",
			annotations: bcsOn("portpool1.ns1 TCP_UDP 8000"),
			want: want{asked: true, req: request(SyntaxBCS,
				v1alpha1.PortRequest{Port: num(8000), Protocol: "TCP_UDP", Pools: []v1alpha1.PoolRef{nsPool("ns1", "portpool1")}})},
		},
		"BCSPortName": {
			reason:      "a port name instead of a number",
			annotations: bcsOn("portpool1.ns1 TCP httpport"),
			want: want{asked: true, req: request(SyntaxBCS,
				v1alpha1.PortRequest{Port: name("httpport"), Protocol: "TCP", Pools: []v1alpha1.PoolRef{nsPool("ns1", "portpool1")}})},
		},
		"BCSNoProtocol": {
			reason:      "two fields: the protocol comes from the container",
			annotations: bcsOn("portpool1.ns1 httpport"),
			want: want{asked: true, req: request(SyntaxBCS,
				v1alpha1.PortRequest{Port: name("httpport"), Pools: []v1alpha1.PoolRef{nsPool("ns1", "portpool1")}})},
		},
		"BCSHostPortEverywhere": {
			reason:      "/hostport on every port makes HostPort the Pod's backend",
			annotations: bcsOn("portpool1.ns1 TCP 8000/hostport"),
			want: want{asked: true, req: with(request(SyntaxBCS,
				v1alpha1.PortRequest{Port: num(8000), Protocol: "TCP", Pools: []v1alpha1.PoolRef{nsPool("ns1", "portpool1")}}), func(r *Request) {
				r.Backend = v1alpha1.BackendHostPort
				r.HostPortFor = map[int]bool{0: true}
			})},
		},
		"BCSHostPortSome": {
			reason:      "/hostport on some ports marks just those; the Pod's backend stays",
			annotations: bcsOn("a UDP 9000\na TCP http/HostPort"),
			want: want{asked: true, req: with(request(SyntaxBCS,
				v1alpha1.PortRequest{Port: num(9000), Protocol: "UDP", Pools: pools("a")},
				v1alpha1.PortRequest{Port: name("http"), Protocol: "TCP", Pools: pools("a")}), func(r *Request) {
				r.HostPortFor = map[int]bool{1: true}
			})},
		},
		"BCSSeveralLines": {
			reason:      "several lines, as documented",
			annotations: bcsOn("portpool1.ns1 TCP 8000\nportpool1.ns1 UDP 8000\nportpool2.ns1 TCP 8080"),
			want: want{asked: true, req: request(SyntaxBCS,
				v1alpha1.PortRequest{Port: num(8000), Protocol: "TCP", Pools: []v1alpha1.PoolRef{nsPool("ns1", "portpool1")}},
				v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: []v1alpha1.PoolRef{nsPool("ns1", "portpool1")}},
				v1alpha1.PortRequest{Port: num(8080), Protocol: "TCP", Pools: []v1alpha1.PoolRef{nsPool("ns1", "portpool2")}})},
		},
		"BCSSemicolons": {
			reason:      "the same on one line with semicolons",
			annotations: bcsOn("portpool1.ns1 TCP 8000;portpool1.ns1 UDP 8000;portpool2.ns1 TCP 8080"),
			want: want{asked: true, req: request(SyntaxBCS,
				v1alpha1.PortRequest{Port: num(8000), Protocol: "TCP", Pools: []v1alpha1.PoolRef{nsPool("ns1", "portpool1")}},
				v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: []v1alpha1.PoolRef{nsPool("ns1", "portpool1")}},
				v1alpha1.PortRequest{Port: num(8080), Protocol: "TCP", Pools: []v1alpha1.PoolRef{nsPool("ns1", "portpool2")}})},
		},
		"BCSMergeAcrossPools": {
			reason:      "lines for the same port and protocol in different pools are one request with several pools",
			annotations: bcsOn("pool-ctcc TCP 8000\npool-cmcc.isp TCP 8000\npool-cucc TCP 9000"),
			want: want{asked: true, req: request(SyntaxBCS,
				v1alpha1.PortRequest{Port: num(8000), Protocol: "TCP", Pools: []v1alpha1.PoolRef{{Name: "pool-ctcc"}, nsPool("isp", "pool-cmcc")}},
				v1alpha1.PortRequest{Port: num(9000), Protocol: "TCP", Pools: pools("pool-cucc")})},
		},
		"BCSKeepDurationAndGate": {
			reason: "bcs keepduration, and its readiness gate switched on by presence alone",
			annotations: map[string]string{BCSAnnotationEnabled: "true", BCSAnnotationPorts: "a TCP 80",
				BCSAnnotationKeepDuration: "5m", BCSAnnotationReadinessGate: ""},
			want: want{asked: true, req: with(request(SyntaxBCS, v1alpha1.PortRequest{Port: num(80), Protocol: "TCP", Pools: pools("a")}), func(r *Request) {
				r.KeepDuration = &metav1.Duration{Duration: 5 * time.Minute}
				r.ReadinessGate = true
			})},
		},
		"BCSGateFalse": {
			reason: "an explicit \"false\" on the bcs readiness gate is honoured",
			annotations: map[string]string{BCSAnnotationEnabled: "true", BCSAnnotationPorts: "a TCP 80",
				BCSAnnotationReadinessGate: "false"},
			want: want{asked: true, req: request(SyntaxBCS, v1alpha1.PortRequest{Port: num(80), Protocol: "TCP", Pools: pools("a")})},
		},
		"BCSWithOurOptions": {
			reason: "our option annotations apply to a bcs Pod and win over the bcs ones",
			annotations: map[string]string{BCSAnnotationEnabled: "true", BCSAnnotationPorts: "a TCP 80",
				BCSAnnotationKeepDuration: "5m", AnnotationKeepDuration: "1h", AnnotationStrategy: "Ordinal",
				BCSAnnotationReadinessGate: "true", AnnotationReadinessGate: "false"},
			want: want{asked: true, req: with(request(SyntaxBCS, v1alpha1.PortRequest{Port: num(80), Protocol: "TCP", Pools: pools("a")}), func(r *Request) {
				r.KeepDuration = &metav1.Duration{Duration: time.Hour}
				r.Strategy = v1alpha1.StrategyOrdinal
			})},
		},
		"NativeIgnoresBCSOptions": {
			reason: "bcs option annotations do not apply to our syntax",
			annotations: map[string]string{AnnotationPorts: "80 a", BCSAnnotationKeepDuration: "5m",
				BCSAnnotationReadinessGate: "true"},
			want: want{asked: true, req: request(SyntaxNative, v1alpha1.PortRequest{Port: num(80), Pools: pools("a")})},
		},

		// Errors in our syntax.
		"NativeBadProtocol": {
			reason:      "the item is numbered and quoted, and the valid protocols listed",
			annotations: map[string]string{AnnotationPorts: "8000/TCP a; 8000/SCTP pool"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/ports item 2 "8000/SCTP pool": protocol "SCTP": protocol must be TCP, UDP, TCP_UDP, TCP_SSL or QUIC`},
		},
		"NativeNoPool": {
			reason:      "a port without a pool",
			annotations: map[string]string{AnnotationPorts: "8000/TCP"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/ports item 1 "8000/TCP": want "<port>[/<protocol>] <pool>[,<pool>…]", e.g. "8000/UDP my-pool"`},
		},
		"NativePortZero": {
			reason:      "port numbers are 1-65535",
			annotations: map[string]string{AnnotationPorts: "0 a"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/ports item 1 "0 a": port 0: a port number must be 1-65535`},
		},
		"NativePortTooLarge": {
			reason:      "port numbers are 1-65535, and huge ones do not overflow into range",
			annotations: map[string]string{AnnotationPorts: "4294975296 a"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/ports item 1 "4294975296 a": port 4294975296: a port number must be 1-65535`},
		},
		"NativeBadPortName": {
			reason:      "port names follow the Kubernetes rules",
			annotations: map[string]string{AnnotationPorts: "Voice_1 a"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/ports item 1 "Voice_1 a": port "Voice_1" is neither a number nor a valid port name (must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-))`},
		},
		"NativeMissingPort": {
			reason:      "a protocol without a port",
			annotations: map[string]string{AnnotationPorts: "/UDP a"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/ports item 1 "/UDP a": missing port: want a container port number or name`},
		},
		"NativeTwoSlashes": {
			reason:      "only one protocol after the port",
			annotations: map[string]string{AnnotationPorts: "8000/TCP/UDP a"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/ports item 1 "8000/TCP/UDP a": "8000/TCP/UDP" has more than one "/": want <port>[/<protocol>]`},
		},
		"NativeStrayComma": {
			reason:      "an empty pool between commas",
			annotations: map[string]string{AnnotationPorts: "8000 a,,b"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/ports item 1 "8000 a,,b": empty pool name (a stray comma?)`},
		},
		"NativePoolsWithSpaces": {
			reason:      "pools separated by spaces get a hint",
			annotations: map[string]string{AnnotationPorts: "8000 a b"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/ports item 1 "8000 a b": pool "a b": separate pools with commas, not spaces`},
		},
		"NativeBadPoolName": {
			reason:      "pool names are Kubernetes object names",
			annotations: map[string]string{AnnotationPorts: "8000 Pool_A"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/ports item 1 "8000 Pool_A": pool "Pool_A": invalid pool name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		},
		"NativeEmptyNamespace": {
			reason:      "a slash with nothing before it",
			annotations: map[string]string{AnnotationPorts: "8000 /a"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/ports item 1 "8000 /a": pool "/a": empty namespace`},
		},
		"NativeDuplicatePoolAcrossItems": {
			reason:      "the same pool twice for one port, on two items",
			annotations: map[string]string{AnnotationPorts: "8000/UDP a\n8000/UDP a"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/ports item 2 "8000/UDP a": pool a is already listed for port 8000/UDP`},
		},
		"NativeDuplicatePoolInItem": {
			reason:      "the same pool twice in one item, once through the Pod's namespace",
			annotations: map[string]string{AnnotationPorts: "8000 a,game/a"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/ports: pool game/a is listed twice for port 8000`},
		},
		"NativeEmpty": {
			reason:      "separators only",
			annotations: map[string]string{AnnotationPorts: " ;\n ; "},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/ports lists no ports`},
		},
		"NativeOptionWithoutPorts": {
			reason:      "an option alone is a request missing its ports",
			annotations: map[string]string{AnnotationStrategy: "Ordinal"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/ports is missing: the other network.tencentcloud.crossplane.io annotations need it, e.g. "8000/TCP my-pool"`},
		},
		"BothSyntaxes": {
			reason:      "one Pod, one syntax",
			annotations: map[string]string{AnnotationPorts: "8000 a", BCSAnnotationEnabled: "true", BCSAnnotationPorts: "a TCP 8000"},
			want:        want{asked: true, err: `both network.tencentcloud.crossplane.io/ports and portpools.networkextension.bkbcs.tencent.com=true ask for ports: use one syntax`},
		},
		"BadStrategy": {
			reason:      "strategy values",
			annotations: map[string]string{AnnotationPorts: "8000 a", AnnotationStrategy: "first"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/strategy "first": must be Dynamic or Ordinal`},
		},
		"BadBackend": {
			reason:      "backend values",
			annotations: map[string]string{AnnotationPorts: "8000 a", AnnotationBackend: "ENI"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/backend "ENI": must be PodIP, HostPort or NodePort`},
		},
		"NegativeKeepDuration": {
			reason:      "a duration must not be negative",
			annotations: map[string]string{AnnotationPorts: "8000 a", AnnotationKeepDuration: "-5m"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/keep-duration "-5m": want a non-negative duration such as "5m" or "2h45m" (units ns, us, ms, s, m, h)`},
		},
		"BadReadinessGate": {
			reason:      "readiness-gate is a boolean",
			annotations: map[string]string{AnnotationPorts: "8000 a", AnnotationReadinessGate: "yes"},
			want:        want{asked: true, err: `network.tencentcloud.crossplane.io/readiness-gate "yes": must be "true" or "false"`},
		},

		// Errors in the bcs syntax.
		"BCSMissingPorts": {
			reason:      "the switch without the ports",
			annotations: map[string]string{BCSAnnotationEnabled: "true"},
			want:        want{asked: true, err: `portpools.networkextension.bkbcs.tencent.com is "true" but ports.portpools.networkextension.bkbcs.tencent.com is missing: list the ports, e.g. "my-pool TCP 8000"`},
		},
		"BCSOneField": {
			reason:      "a pool alone",
			annotations: bcsOn("a TCP 80\na"),
			want:        want{asked: true, err: `ports.portpools.networkextension.bkbcs.tencent.com item 2 "a": want "<pool>[.<namespace>] [<protocol>] <port>[/hostport]", e.g. "my-pool TCP 8000"`},
		},
		"BCSFourFields": {
			reason:      "too many fields",
			annotations: bcsOn("a TCP 80 extra"),
			want:        want{asked: true, err: `ports.portpools.networkextension.bkbcs.tencent.com item 1 "a TCP 80 extra": want "<pool>[.<namespace>] [<protocol>] <port>[/hostport]", e.g. "my-pool TCP 8000"`},
		},
		"BCSBadProtocol": {
			reason:      "bcs protocols are checked the same way",
			annotations: bcsOn("a SCTP 80"),
			want:        want{asked: true, err: `ports.portpools.networkextension.bkbcs.tencent.com item 1 "a SCTP 80": protocol "SCTP": protocol must be TCP, UDP, TCP_UDP, TCP_SSL or QUIC`},
		},
		"BCSPoolItem": {
			reason:      "pinning a bcs pool item has no equivalent",
			annotations: bcsOn("a.ns/item1 TCP 80"),
			want:        want{asked: true, err: `ports.portpools.networkextension.bkbcs.tencent.com item 1 "a.ns/item1 TCP 80": pool "a.ns/item1": choosing a pool item ("pool/item") is not supported; give those load balancers a PortPool of their own`},
		},
		"BCSTwoDots": {
			reason:      "the dot separates the namespace, so only one",
			annotations: bcsOn("a.b.c TCP 80"),
			want:        want{asked: true, err: `ports.portpools.networkextension.bkbcs.tencent.com item 1 "a.b.c TCP 80": pool "a.b.c": want <pool> or <pool>.<namespace>, with one dot`},
		},
		"BCSEmptyNamespace": {
			reason:      "a trailing dot",
			annotations: bcsOn("a. TCP 80"),
			want:        want{asked: true, err: `ports.portpools.networkextension.bkbcs.tencent.com item 1 "a. TCP 80": pool "a.": empty namespace`},
		},
		"BCSBadSuffix": {
			reason:      "hostport is the only port suffix",
			annotations: bcsOn("a TCP 80/nodeport"),
			want:        want{asked: true, err: `ports.portpools.networkextension.bkbcs.tencent.com item 1 "a TCP 80/nodeport": port suffix "/nodeport": the only suffix is /hostport`},
		},
		"BCSHostPortMismatch": {
			reason:      "merged lines must agree on /hostport",
			annotations: bcsOn("a TCP 80/hostport; b TCP 80"),
			want:        want{asked: true, err: `ports.portpools.networkextension.bkbcs.tencent.com item 2 "b TCP 80": port 80/TCP is listed both with and without /hostport; use the same form on every line`},
		},
		"BCSBadKeepDuration": {
			reason:      "the error names the bcs annotation that was wrong",
			annotations: map[string]string{BCSAnnotationEnabled: "true", BCSAnnotationPorts: "a TCP 80", BCSAnnotationKeepDuration: "5 minutes"},
			want:        want{asked: true, err: `keepduration.portbinding.bkbcs.tencent.com "5 minutes": want a non-negative duration such as "5m" or "2h45m" (units ns, us, ms, s, m, h)`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, asked, err := Parse(pod(tc.annotations))
			got := want{req: req, asked: asked}
			if err != nil {
				got.err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nParse: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestBackendFor(t *testing.T) {
	r := &Request{Backend: v1alpha1.BackendNodePort, HostPortFor: map[int]bool{1: true}}
	got := []string{r.BackendFor(0), r.BackendFor(1), r.BackendFor(2)}
	want := []string{v1alpha1.BackendNodePort, v1alpha1.BackendHostPort, v1alpha1.BackendNodePort}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a /hostport request targets the hostPort, the others the Pod's backend: -want, +got:\n%s", diff)
	}
}
