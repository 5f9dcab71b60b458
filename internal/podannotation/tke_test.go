package podannotation

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

func tkeOn(lines string) map[string]string {
	return map[string]string{TKEAnnotationEnableMapping: "true", TKEAnnotationPortMapping: lines}
}

func tkePools(names ...string) []v1alpha1.PoolRef {
	out := make([]v1alpha1.PoolRef, 0, len(names))
	for _, n := range names {
		out = append(out, nsPool(TKEPoolNamespace, n))
	}
	return out
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestParseTKE(t *testing.T) {
	type want struct {
		req   *Request
		asked bool
		err   string
	}
	tke := func(ports ...v1alpha1.PortRequest) *Request { return request(SyntaxTKEExtend, ports...) }
	cases := map[string]struct {
		reason      string
		annotations map[string]string
		want        want
	}{
		// Not asked.
		"SwitchOther": {
			reason:      "tke-extend acts on \"true\" and \"false\" only; other values leave the Pod alone",
			annotations: map[string]string{TKEAnnotationEnableMapping: "yes", TKEAnnotationPortMapping: "8000 UDP pool-a"},
		},
		"LinesWithoutSwitch": {
			reason:      "the mapping lines alone ask for nothing, as with tke-extend",
			annotations: map[string]string{TKEAnnotationPortMapping: "8000 UDP pool-a"},
		},
		"FalseWithoutLines": {
			reason:      "enable-clb-port-mapping \"false\" alone is only the isolation switch (for Pods that ask otherwise)",
			annotations: map[string]string{TKEAnnotationEnableMapping: "false"},
		},
		"HostPortLinesWithoutSwitch": {
			reason:      "the hostPort lines alone ask for nothing",
			annotations: map[string]string{TKEAnnotationHostPortMapping: "7654 UDP pool-a"},
		},

		// Every protocol, in tke-extend's spelling.
		"TCP": {
			reason:      "a pool name resolves to the PortPool of that name in TKEPoolNamespace",
			annotations: tkeOn("8000 TCP pool-a"),
			want:        want{asked: true, req: tke(v1alpha1.PortRequest{Port: num(8000), Protocol: "TCP", Pools: tkePools("pool-a")})},
		},
		"UDP": {
			reason:      "UDP",
			annotations: tkeOn("8000 UDP pool-test"),
			want:        want{asked: true, req: tke(v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: tkePools("pool-test")})},
		},
		"TCPUDP": {
			reason:      "TCPUDP is our TCP_UDP: TCP and UDP on one public port",
			annotations: tkeOn("7000 TCPUDP pool-test"),
			want:        want{asked: true, req: tke(v1alpha1.PortRequest{Port: num(7000), Protocol: "TCP_UDP", Pools: tkePools("pool-test")})},
		},
		"TCPSSLWithCert": {
			reason:      "the documented TLS line: TCP_SSL with a certificate secret",
			annotations: tkeOn("8000 TCP_SSL pool-test certSecret=cert-secret"),
			want:        want{asked: true, req: tke(v1alpha1.PortRequest{Port: num(8000), Protocol: "TCP_SSL", Pools: tkePools("pool-test"), CertSecret: "cert-secret"})},
		},
		"QUICWithCert": {
			reason:      "QUIC, lower case accepted",
			annotations: tkeOn("443 quic pool-test certSecret=cert"),
			want:        want{asked: true, req: tke(v1alpha1.PortRequest{Port: num(443), Protocol: "QUIC", Pools: tkePools("pool-test"), CertSecret: "cert"})},
		},
		"CertWithSamePort": {
			reason:      "both options, in either order",
			annotations: tkeOn("443 TCP_SSL a,b certSecret=cert,useSamePortAcrossPools"),
			want:        want{asked: true, req: tke(v1alpha1.PortRequest{Port: num(443), Protocol: "TCP_SSL", Pools: tkePools("a", "b"), SamePortAcrossPools: true, CertSecret: "cert"})},
		},
		"TwoCertsOnALine": {
			reason:      "a port's listeners take one certificate",
			annotations: tkeOn("443 TCP_SSL a certSecret=one,certSecret=two"),
			want:        want{asked: true, err: `the line names two certificate Secrets`},
		},
		"TwoCertsForAPort": {
			reason:      "two lines of one port must name the same certificate",
			annotations: tkeOn("443 TCP_SSL a certSecret=one\n443 TCP_SSL b certSecret=two"),
			want:        want{asked: true, err: `different certSecret options`},
		},
		"DocumentedStatefulSet": {
			reason:      "the StatefulSet of tke-extend's guide: two lines, one port each",
			annotations: tkeOn("8000 UDP pool-test\n7000 TCPUDP pool-test"),
			want: want{asked: true, req: tke(
				v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: tkePools("pool-test")},
				v1alpha1.PortRequest{Port: num(7000), Protocol: "TCP_UDP", Pools: tkePools("pool-test")})},
		},
		"SeveralPools": {
			reason:      "one address per pool (one per ISP), CRLF line ends and blank lines tolerated",
			annotations: tkeOn("7000 TCPUDP pool-ctcc,pool-cmcc,pool-cucc\r\n\r\n9000 UDP pool-bgp\r\n"),
			want: want{asked: true, req: tke(
				v1alpha1.PortRequest{Port: num(7000), Protocol: "TCP_UDP", Pools: tkePools("pool-ctcc", "pool-cmcc", "pool-cucc")},
				v1alpha1.PortRequest{Port: num(9000), Protocol: "UDP", Pools: tkePools("pool-bgp")})},
		},
		"SamePortTwoLines": {
			reason:      "two lines for one port and protocol are one request with both pools",
			annotations: tkeOn("8000 UDP pool-ctcc\n8000 UDP pool-cmcc"),
			want:        want{asked: true, req: tke(v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: tkePools("pool-ctcc", "pool-cmcc")})},
		},
		"NamespacedPool": {
			reason:      "namespace/name names a PortPool of another namespace (our extension; no CLBPortPool name has a slash)",
			annotations: tkeOn("8000 UDP game/pool-a,pool-b"),
			want:        want{asked: true, req: tke(v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: []v1alpha1.PoolRef{nsPool("game", "pool-a"), nsPool(TKEPoolNamespace, "pool-b")}})},
		},
		"Disabled": {
			reason:      "\"false\" with lines: the Pod asks (and Isolated says it is out of service), so its ports are kept",
			annotations: map[string]string{TKEAnnotationEnableMapping: "false", TKEAnnotationPortMapping: "8000 UDP pool-a"},
			want:        want{asked: true, req: tke(v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: tkePools("pool-a")})},
		},
		"SamePortAcrossPoolsOrdinal": {
			reason: "useSamePortAcrossPools with our Ordinal strategy",
			annotations: merge(tkeOn("7000 TCPUDP pool-ctcc,pool-cmcc useSamePortAcrossPools"),
				map[string]string{AnnotationStrategy: "Ordinal"}),
			want: want{asked: true, req: with(tke(v1alpha1.PortRequest{Port: num(7000), Protocol: "TCP_UDP", Pools: tkePools("pool-ctcc", "pool-cmcc"), SamePortAcrossPools: true}),
				func(r *Request) { r.Strategy = v1alpha1.StrategyOrdinal })},
		},
		"SamePortAcrossPoolsDynamic": {
			reason:      "useSamePortAcrossPools with the default Dynamic strategy: the allocator takes a port free in every pool",
			annotations: tkeOn("8000 TCPUDP pool-ctcc,pool-cmcc,pool-cucc,pool-bgp useSamePortAcrossPools\n9000 UDP pool-bgp"),
			want: want{asked: true, req: tke(
				v1alpha1.PortRequest{Port: num(8000), Protocol: "TCP_UDP", Pools: tkePools("pool-ctcc", "pool-cmcc", "pool-cucc", "pool-bgp"), SamePortAcrossPools: true},
				v1alpha1.PortRequest{Port: num(9000), Protocol: "UDP", Pools: tkePools("pool-bgp")})},
		},
		"SamePortTwoLinesBothWithIt": {
			reason:      "lines of one port that all say useSamePortAcrossPools are one request over all their pools",
			annotations: tkeOn("8000 UDP pool-ctcc useSamePortAcrossPools\n8000 UDP pool-cmcc useSamePortAcrossPools"),
			want:        want{asked: true, req: tke(v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: tkePools("pool-ctcc", "pool-cmcc"), SamePortAcrossPools: true})},
		},
		"OurOptionsApply": {
			reason:      "our keep duration and readiness gate apply to a tke-extend Pod",
			annotations: merge(tkeOn("8000 UDP pool-a"), map[string]string{AnnotationKeepDuration: "5m", AnnotationReadinessGate: "true"}),
			want: want{asked: true, req: with(tke(v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: tkePools("pool-a")}),
				func(r *Request) { r.KeepDuration = &metav1.Duration{Duration: 5 * time.Minute}; r.ReadinessGate = true })},
		},
		"Retain": {
			reason:      "retain \"true\" keeps the ports of a deleted Pod for one of the same name, with no time limit",
			annotations: merge(tkeOn("8000 UDP pool-a"), map[string]string{TKEAnnotationRetain: "true"}),
			want: want{asked: true, req: with(tke(v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: tkePools("pool-a")}),
				func(r *Request) { r.Retain = true })},
		},
		"RetainSpaceAndCase": {
			reason:      "retain is read as the switch is: any case, surrounding space trimmed",
			annotations: merge(tkeOn("8000 UDP pool-a"), map[string]string{TKEAnnotationRetain: " True "}),
			want: want{asked: true, req: with(tke(v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: tkePools("pool-a")}),
				func(r *Request) { r.Retain = true })},
		},
		"RetainFalse": {
			reason:      "retain \"false\" is the default: the ports go with the Pod",
			annotations: merge(tkeOn("8000 UDP pool-a"), map[string]string{TKEAnnotationRetain: "false"}),
			want:        want{asked: true, req: tke(v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: tkePools("pool-a")})},
		},
		"RetainHostPort": {
			reason: "retain applies to the hostPort variant too",
			annotations: map[string]string{TKEAnnotationEnableHostPortMapping: "true", TKEAnnotationHostPortMapping: "7654 UDP pool-a",
				TKEAnnotationRetain: "true"},
			want: want{asked: true, req: with(tke(v1alpha1.PortRequest{Port: num(7654), Protocol: "UDP", Pools: tkePools("pool-a")}),
				func(r *Request) {
					r.Backend = v1alpha1.BackendHostPort
					r.HostPortFor = map[int]bool{0: true}
					r.Retain = true
				})},
		},
		"RetainOnOurSyntax": {
			reason:      "retain is tke-extend's: a Pod asking in our syntax keeps its ports by keep-duration, and the annotation is not read",
			annotations: map[string]string{AnnotationPorts: "8000/UDP pool-a", TKEAnnotationRetain: "yes"},
			want:        want{asked: true, req: request(SyntaxNative, v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: pools("pool-a")})},
		},

		// The hostPort variant.
		"HostPort": {
			reason: "enable-clb-hostport-mapping: every port forwards to the node and its hostPort",
			annotations: map[string]string{TKEAnnotationEnableHostPortMapping: "true",
				TKEAnnotationHostPortMapping: "7654 TCPUDP pool-a"},
			want: want{asked: true, req: with(tke(v1alpha1.PortRequest{Port: num(7654), Protocol: "TCP_UDP", Pools: tkePools("pool-a")}),
				func(r *Request) { r.Backend = v1alpha1.BackendHostPort; r.HostPortFor = map[int]bool{0: true} })},
		},
		"HostPortBesidePodIP": {
			reason: "both variants on one Pod: the hostPort lines' ports alone are HostPort",
			annotations: merge(tkeOn("8000 UDP pool-a"), map[string]string{TKEAnnotationEnableHostPortMapping: "true",
				TKEAnnotationHostPortMapping: "7654 UDP pool-b\n7654 TCP pool-b"}),
			want: want{asked: true, req: with(tke(
				v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: tkePools("pool-a")},
				v1alpha1.PortRequest{Port: num(7654), Protocol: "UDP", Pools: tkePools("pool-b")},
				v1alpha1.PortRequest{Port: num(7654), Protocol: "TCP", Pools: tkePools("pool-b")}),
				func(r *Request) { r.HostPortFor = map[int]bool{1: true, 2: true} })},
		},

		"SwitchBesideOurSyntax": {
			reason:      "enable-clb-port-mapping \"true\" without lines on a Pod that asks in our syntax is only its isolation switch",
			annotations: map[string]string{TKEAnnotationEnableMapping: "true", AnnotationPorts: "8000/UDP pool-a"},
			want:        want{asked: true, req: request(SyntaxNative, v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: pools("pool-a")})},
		},

		// Errors.
		"HostPortSwitchWithoutLines": {
			reason:      "the hostPort switch without lines is told through the Node (TKENodeHostPorts): the Pod's own lines are served as they are",
			annotations: merge(tkeOn("8000 UDP pool-a"), map[string]string{TKEAnnotationEnableHostPortMapping: "true"}),
			want:        want{asked: true, req: request(SyntaxTKEExtend, v1alpha1.PortRequest{Port: num(8000), Protocol: "UDP", Pools: tkePools("pool-a")})},
		},
		"MissingLines": {
			reason:      "the switch without the lines",
			annotations: map[string]string{TKEAnnotationEnableMapping: "true"},
			want:        want{asked: true, err: TKEAnnotationEnableMapping + ` is "true" but ` + TKEAnnotationPortMapping + ` is missing`},
		},
		"HostPortMissingLines": {
			reason:      "the hostPort switch alone asks for no port of the Pod's own: it is told its Node's (TKENodeHostPorts)",
			annotations: map[string]string{TKEAnnotationEnableHostPortMapping: "true"},
			want:        want{asked: false},
		},
		"NoLines": {
			reason:      "only blank lines",
			annotations: tkeOn("\n \n"),
			want:        want{asked: true, err: TKEAnnotationPortMapping + " lists no ports"},
		},
		"TwoFields": {
			reason:      "a line without a pool",
			annotations: tkeOn("8000 UDP"),
			want:        want{asked: true, err: TKEAnnotationPortMapping + ` item 1 "8000 UDP": want "<port> <protocol> <pool>`},
		},
		"FiveFields": {
			reason:      "pools separated by spaces",
			annotations: tkeOn("8000 UDP pool-a pool-b useSamePortAcrossPools"),
			want:        want{asked: true, err: `item 1 "8000 UDP pool-a pool-b useSamePortAcrossPools": want`},
		},
		"PortName": {
			reason:      "tke-extend lines name ports by number",
			annotations: tkeOn("8000 UDP a\ngame UDP a"),
			want:        want{asked: true, err: `item 2 "game UDP a": port "game": want a container port number (1-65535)`},
		},
		"PortOutOfRange": {
			reason:      "a port number beyond 65535",
			annotations: tkeOn("70000 UDP a"),
			want:        want{asked: true, err: "port 70000: a port number must be 1-65535"},
		},
		"PortZero": {
			reason:      "port 0",
			annotations: tkeOn("0 UDP a"),
			want:        want{asked: true, err: "port 0: a port number must be 1-65535"},
		},
		"BadProtocol": {
			reason:      "an unknown protocol names tke-extend's spellings",
			annotations: tkeOn("8000 SCTP a"),
			want:        want{asked: true, err: `protocol "SCTP": protocol must be TCP, UDP, TCPUDP (TCP and UDP on one public port), TCP_SSL or QUIC`},
		},
		"OurTCPUDPSpelling": {
			reason:      "our TCP_UDP spelling is not tke-extend's",
			annotations: tkeOn("8000 TCP_UDP a"),
			want:        want{asked: true, err: `protocol "TCP_UDP"`},
		},
		"StrayComma": {
			reason:      "an empty pool",
			annotations: tkeOn("8000 UDP a,,b"),
			want:        want{asked: true, err: "empty pool name (a stray comma?)"},
		},
		"BadPoolName": {
			reason:      "a pool name that is no Kubernetes name",
			annotations: tkeOn("8000 UDP Pool_A"),
			want:        want{asked: true, err: `pool "Pool_A": invalid pool name`},
		},
		"PoolTwice": {
			reason:      "the same pool twice for one port",
			annotations: tkeOn("8000 UDP a\n8000 UDP a"),
			want:        want{asked: true, err: "pool " + TKEPoolNamespace + "/a is already listed for port 8000/UDP"},
		},
		"UnknownOption": {
			reason:      "options are useSamePortAcrossPools and certSecret",
			annotations: tkeOn("8000 UDP a sameport"),
			want:        want{asked: true, err: `option "sameport": the options are useSamePortAcrossPools and certSecret=<secret>`},
		},
		"CertOnUDP": {
			reason:      "a certificate for a protocol without TLS",
			annotations: tkeOn("8000 UDP a certSecret=c"),
			want:        want{asked: true, err: `option "certSecret=c": a certificate applies to TCP_SSL and QUIC only`},
		},
		"BadCertName": {
			reason:      "a certificate secret that is no Kubernetes name",
			annotations: tkeOn("8000 TCP_SSL a certSecret=My_Cert"),
			want:        want{asked: true, err: `option "certSecret=My_Cert": invalid Secret name`},
		},
		"SamePortOnOneLineOfTwo": {
			reason:      "two lines of one port, one with useSamePortAcrossPools: which pools share the port would be a guess",
			annotations: tkeOn("8000 UDP pool-ctcc useSamePortAcrossPools\n8000 UDP pool-cmcc"),
			want:        want{asked: true, err: `item 2 "8000 UDP pool-cmcc": port 8000/UDP is listed both with and without useSamePortAcrossPools`},
		},
		"BothVariantsOnePort": {
			reason: "one port in both annotations",
			annotations: merge(tkeOn("8000 UDP pool-a"), map[string]string{TKEAnnotationEnableHostPortMapping: "true",
				TKEAnnotationHostPortMapping: "8000 UDP pool-b"}),
			want: want{asked: true, err: "port 8000/UDP is in both " + TKEAnnotationPortMapping + " and " + TKEAnnotationHostPortMapping},
		},
		"OurBackend": {
			reason:      "the tke-extend syntax chooses the backend by annotation",
			annotations: merge(tkeOn("8000 UDP pool-a"), map[string]string{AnnotationBackend: "HostPort"}),
			want:        want{asked: true, err: AnnotationBackend + " cannot be used with " + TKEAnnotationPortMapping},
		},
		"WithOurPorts": {
			reason:      "two syntaxes asking for ports",
			annotations: merge(tkeOn("8000 UDP pool-a"), map[string]string{AnnotationPorts: "8000 pool-a"}),
			want:        want{asked: true, err: TKEAnnotationEnableMapping + " asks for ports beside " + AnnotationPorts + ": use one syntax"},
		},
		"WithBCS": {
			reason:      "tke-extend's and bcs's syntaxes",
			annotations: merge(map[string]string{TKEAnnotationEnableHostPortMapping: "true", TKEAnnotationHostPortMapping: "8000 UDP a"}, bcsOn("a TCP 8000")),
			want:        want{asked: true, err: TKEAnnotationEnableHostPortMapping + " asks for ports beside " + BCSAnnotationEnabled + "=true: use one syntax"},
		},
		"RetainNotABool": {
			reason:      "retain is \"true\" or \"false\"",
			annotations: merge(tkeOn("8000 UDP pool-a"), map[string]string{TKEAnnotationRetain: "yes"}),
			want:        want{asked: true, err: TKEAnnotationRetain + ` "yes": must be "true" (keep the ports for a Pod of the same name, with no time limit, once this one is deleted) or "false"`},
		},
		"RetainEmpty": {
			reason:      "an empty retain is neither",
			annotations: merge(tkeOn("8000 UDP pool-a"), map[string]string{TKEAnnotationRetain: ""}),
			want:        want{asked: true, err: TKEAnnotationRetain + ` "": must be "true"`},
		},
		"RetainWithKeepDuration": {
			reason:      "retain with no time limit and a keep duration say two things",
			annotations: merge(tkeOn("8000 UDP pool-a"), map[string]string{TKEAnnotationRetain: "true", AnnotationKeepDuration: "5m"}),
			want:        want{asked: true, err: TKEAnnotationRetain + ` "true" keeps the ports with no time limit; ` + AnnotationKeepDuration + " cannot be used with it"},
		},
		"WithTKEEIP": {
			reason:      "ports and TKE's EIP",
			annotations: merge(tkeOn("8000 UDP a"), map[string]string{TKEAnnotationEIPAttributes: "{}"}),
			want:        want{asked: true, err: "beside " + TKEAnnotationEIPAttributes},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, asked, err := Parse(pod(tc.annotations))
			if asked != tc.want.asked {
				t.Errorf("%s\nasked = %v, want %v", tc.reason, asked, tc.want.asked)
			}
			if tc.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want.err) {
					t.Fatalf("%s\nerr = %v, want it to contain %q", tc.reason, err, tc.want.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nunexpected error: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want.req, req); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestTKEDisabledIsIsolated: the tke-extend Pod switched off is served
// (asked) and isolated: ports kept, no target.
func TestTKEDisabledIsIsolated(t *testing.T) {
	p := pod(map[string]string{TKEAnnotationEnableMapping: "false", TKEAnnotationPortMapping: "8000 UDP pool-a"})
	if _, asked, err := Parse(p); !asked || err != nil {
		t.Fatalf("Parse: asked %v, err %v; want asked, no error", asked, err)
	}
	if iso, err := Isolated(p); !iso || err != nil {
		t.Errorf("Isolated = %v, %v; want true", iso, err)
	}
	p.Annotations[TKEAnnotationEnableMapping] = "true"
	if iso, err := Isolated(p); iso || err != nil {
		t.Errorf("switched on: Isolated = %v, %v; want false", iso, err)
	}
}

func golden(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTKEResultGolden: a Pod annotated "80 TCPUDP pool-test" gets the
// result of tke-extend's guide byte for byte.
func TestTKEResultGolden(t *testing.T) {
	ports := []v1alpha1.PortRequest{{Port: num(80), Protocol: "TCP_UDP", Pools: tkePools("pool-test")}}
	bs := []v1alpha1.PortBinding{{
		Pool: TKEPoolNamespace + "/pool-test", Protocol: "TCP_UDP", ContainerPort: 80, LoadBalancerID: "lb-6phn6qgb",
		Region: "ap-chengdu", VIPs: []string{"111.231.210.160"}, Port: 30000, ISP: "BGP",
		ListenerIDs: map[string]string{"TCP": "lbl-qvjvdt9n", "UDP": "lbl-bbxvltnv"}, TargetIP: "10.0.0.5", TargetPort: 80,
	}}
	got := TKEResultAnnotations(ports, v1alpha1.BackendPodIP, bs, true)
	want := map[string]string{
		TKEAnnotationMappingResult: golden(t, "tke-port-mapping-result.json"),
		TKEAnnotationMappingStatus: "Ready",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want, +got:\n%s", diff)
	}

	// Not serving (waiting, isolated, moving): nothing to write, so the
	// Pod keeps what it was told, as tke-extend leaves it.
	if got = TKEResultAnnotations(ports, v1alpha1.BackendPodIP, bs, false); got != nil {
		t.Errorf("not bound: %v, want nothing written", got)
	}
}

// TestTKEResultHostname: a binding on a domain-based load balancer is told
// by its hostname, with no ips, in tke-extend's field order (hostname
// between endPort and ips; in the hostPort result after address).
func TestTKEResultHostname(t *testing.T) {
	const host = "lb-dyn0001-1251000000.clb.cd-tencentclb.com"
	ports := []v1alpha1.PortRequest{
		{Port: num(7000), Protocol: "TCP_UDP", Pools: tkePools("pool-test")},
		{Port: num(7654), Protocol: "UDP", Pools: tkePools("pool-test"), Backend: v1alpha1.BackendHostPort},
	}
	bs := []v1alpha1.PortBinding{
		{Pool: TKEPoolNamespace + "/pool-test", Protocol: "TCP_UDP", ContainerPort: 7000, LoadBalancerID: "lb-dyn0001", Region: "ap-chengdu",
			VIPs: []string{"111.231.210.7"}, Hostname: host, Port: 30000, ListenerIDs: map[string]string{"TCP": "lbl-t1", "UDP": "lbl-u1"}},
		{Pool: TKEPoolNamespace + "/pool-test", Protocol: "UDP", ContainerPort: 7654, LoadBalancerID: "lb-dyn0001", Region: "ap-chengdu",
			VIPs: []string{"111.231.210.7"}, Hostname: host, Port: 32000, ListenerIDs: map[string]string{"UDP": "lbl-h1"}, TargetPort: 7100},
	}
	got := TKEResultAnnotations(ports, v1alpha1.BackendPodIP, bs, true)
	want := map[string]string{
		TKEAnnotationMappingResult:         golden(t, "tke-port-mapping-result-hostname.json"),
		TKEAnnotationMappingStatus:         "Ready",
		TKEAnnotationHostPortMappingResult: golden(t, "tke-hostport-mapping-result-hostname.json"),
		TKEAnnotationHostPortMappingStatus: "Ready",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want, +got:\n%s", diff)
	}
}

// TestTKEHostPortResultGolden: a Pod whose TCP and UDP container port 80
// have host ports 8344 and 8713 gets the hostPort result of tke-extend's
// guide byte for byte.
func TestTKEHostPortResultGolden(t *testing.T) {
	ports := []v1alpha1.PortRequest{
		{Port: num(80), Protocol: "TCP", Pools: tkePools("pool-test")},
		{Port: num(80), Protocol: "UDP", Pools: tkePools("pool-test")},
	}
	lb := func(proto, listener string, port, hostPort int32) v1alpha1.PortBinding {
		return v1alpha1.PortBinding{Pool: TKEPoolNamespace + "/pool-test", Protocol: proto, ContainerPort: 80, LoadBalancerID: "lb-cb92uxex",
			Region: "ap-chengdu", VIPs: []string{"111.231.211.104"}, Port: port, ListenerIDs: map[string]string{proto: listener},
			TargetIP: "10.0.1.2", TargetPort: hostPort}
	}
	bs := []v1alpha1.PortBinding{lb("UDP", "lbl-i4n8f78h", 30713, 8713), lb("TCP", "lbl-knmgdwb1", 30344, 8344)}
	got := TKEResultAnnotations(ports, v1alpha1.BackendHostPort, bs, true)
	want := map[string]string{
		TKEAnnotationHostPortMappingResult: golden(t, "tke-hostport-mapping-result.json"),
		TKEAnnotationHostPortMappingStatus: "Ready",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want, +got:\n%s", diff)
	}
}

// TestTKEResultShapes: several pools, a segment, an IPv6 VIP, a binding
// with no VIP yet, TCP_SSL and QUIC, and both variants on one Pod.
func TestTKEResultShapes(t *testing.T) {
	ports := []v1alpha1.PortRequest{
		{Port: num(7000), Protocol: "TCP_UDP", Pools: tkePools("pool-ctcc", "pool-cmcc")},
		{Port: num(9000), Protocol: "UDP", Pools: []v1alpha1.PoolRef{nsPool("game", "pool-v6")}},
		{Port: num(443), Protocol: "TCP_SSL", Pools: tkePools("pool-tls")},
		{Port: num(4433), Protocol: "QUIC", Pools: tkePools("pool-tls")},
		{Port: num(7654), Protocol: "UDP", Pools: tkePools("pool-node"), Backend: v1alpha1.BackendHostPort},
	}
	bs := []v1alpha1.PortBinding{
		{Pool: TKEPoolNamespace + "/pool-ctcc", Protocol: "TCP_UDP", ContainerPort: 7000, LoadBalancerID: "lb-ctcc", Region: "ap-nanjing",
			VIPs: []string{"1.1.1.1"}, Port: 30001, ListenerIDs: map[string]string{"TCP": "lbl-c1", "UDP": "lbl-c2"}},
		{Pool: TKEPoolNamespace + "/pool-cmcc", Protocol: "TCP_UDP", ContainerPort: 7000, LoadBalancerID: "lb-cmcc", Region: "ap-nanjing",
			VIPs: []string{"2.2.2.2"}, Port: 30005, ListenerIDs: map[string]string{"TCP": "lbl-m1", "UDP": "lbl-m2"}},
		{Pool: "game/pool-v6", Protocol: "UDP", ContainerPort: 9000, LoadBalancerID: "lb-v6", Region: "ap-shanghai",
			VIPs: []string{"2402:4e00::1"}, Port: 31000, EndPort: 31009, ListenerIDs: map[string]string{"UDP": "lbl-v6"}},
		{Pool: TKEPoolNamespace + "/pool-tls", Protocol: "TCP_SSL", ContainerPort: 443, LoadBalancerID: "lb-tls", Region: "ap-chengdu",
			Port: 30443, ListenerIDs: map[string]string{"TCP_SSL": "lbl-ssl"}},
		{Pool: TKEPoolNamespace + "/pool-tls", Protocol: "QUIC", ContainerPort: 4433, LoadBalancerID: "lb-tls", Region: "ap-chengdu",
			VIPs: []string{"3.3.3.3"}, Port: 30444, ListenerIDs: map[string]string{"QUIC": "lbl-quic"}},
		{Pool: TKEPoolNamespace + "/pool-node", Protocol: "UDP", ContainerPort: 7654, LoadBalancerID: "lb-node", Region: "ap-chengdu",
			VIPs: []string{"4.4.4.4"}, Port: 32000, ListenerIDs: map[string]string{"UDP": "lbl-node"}, TargetIP: "10.0.1.2", TargetPort: 7100},
	}
	got := TKEResultAnnotations(ports, v1alpha1.BackendPodIP, bs, true)
	if len(got) != 4 || got[TKEAnnotationMappingStatus] != "Ready" || got[TKEAnnotationHostPortMappingStatus] != "Ready" {
		t.Fatalf("both variants: want both results and statuses Ready, got %v", got)
	}
	var mappings []TKEPortMapping
	if err := json.Unmarshal([]byte(got[TKEAnnotationMappingResult]), &mappings); err != nil {
		t.Fatal(err)
	}
	want := []TKEPortMapping{
		{Port: 9000, Protocol: "UDP", Pool: "game/pool-v6", Region: "ap-shanghai", LoadbalancerID: "lb-v6", LoadbalancerPort: 31000,
			LoadbalancerEndPort: 31009, ListenerID: "lbl-v6", EndPort: 9009, IPs: []string{"2402:4e00::1"}, Address: "2402:4e00::1:31000"},
		{Port: 7000, Protocol: "TCP", Pool: "pool-cmcc", Region: "ap-nanjing", LoadbalancerID: "lb-cmcc", LoadbalancerPort: 30005,
			ListenerID: "lbl-m1", IPs: []string{"2.2.2.2"}, Address: "2.2.2.2:30005"},
		{Port: 7000, Protocol: "UDP", Pool: "pool-cmcc", Region: "ap-nanjing", LoadbalancerID: "lb-cmcc", LoadbalancerPort: 30005,
			ListenerID: "lbl-m2", IPs: []string{"2.2.2.2"}, Address: "2.2.2.2:30005"},
		{Port: 7000, Protocol: "TCP", Pool: "pool-ctcc", Region: "ap-nanjing", LoadbalancerID: "lb-ctcc", LoadbalancerPort: 30001,
			ListenerID: "lbl-c1", IPs: []string{"1.1.1.1"}, Address: "1.1.1.1:30001"},
		{Port: 7000, Protocol: "UDP", Pool: "pool-ctcc", Region: "ap-nanjing", LoadbalancerID: "lb-ctcc", LoadbalancerPort: 30001,
			ListenerID: "lbl-c2", IPs: []string{"1.1.1.1"}, Address: "1.1.1.1:30001"},
		{Port: 443, Protocol: "TCP_SSL", Pool: "pool-tls", Region: "ap-chengdu", LoadbalancerID: "lb-tls", LoadbalancerPort: 30443,
			ListenerID: "lbl-ssl"},
		{Port: 4433, Protocol: "QUIC", Pool: "pool-tls", Region: "ap-chengdu", LoadbalancerID: "lb-tls", LoadbalancerPort: 30444,
			ListenerID: "lbl-quic", IPs: []string{"3.3.3.3"}, Address: "3.3.3.3:30444"},
	}
	if diff := cmp.Diff(want, mappings); diff != "" {
		t.Errorf("sorted by pool, load balancer, public port, container port, protocol; TCPUDP as two entries; "+
			"a segment with both end ports; IPv6 unbracketed; the pool as the Pod named it: -want, +got:\n%s", diff)
	}
	if !strings.Contains(got[TKEAnnotationMappingResult], `"listenerId":"lbl-ssl","address":""}`) {
		t.Errorf("a binding without a VIP has an empty address and no ips, as tke-extend writes: %s", got[TKEAnnotationMappingResult])
	}
	var host []TKEHostPortMapping
	if err := json.Unmarshal([]byte(got[TKEAnnotationHostPortMappingResult]), &host); err != nil {
		t.Fatal(err)
	}
	wantHost := []TKEHostPortMapping{{ContainerPort: 7654, HostPort: 7100, Protocol: "UDP", Pool: "pool-node", Region: "ap-chengdu",
		LoadbalancerID: "lb-node", LoadbalancerPort: 32000, ListenerID: "lbl-node", Address: "4.4.4.4:32000", IPs: []string{"4.4.4.4"}}}
	if diff := cmp.Diff(wantHost, host); diff != "" {
		t.Errorf("the hostPort line's port goes to the hostPort result only: -want, +got:\n%s", diff)
	}

	// Nothing bound yet: nothing written.
	if got = TKEResultAnnotations(ports[:1], v1alpha1.BackendPodIP, nil, false); got != nil {
		t.Errorf("unbound: %v, want nothing written", got)
	}
}

// TestTKEResultAddressIPVersion: the load balancer's IP version is written
// where tke-extend v2.5.2 writes it (after listenerId, before endPort), as
// the cloud answered it; it is left out when unknown, and the hostPort
// result never has it, as there.
func TestTKEResultAddressIPVersion(t *testing.T) {
	seg := v1alpha1.PortBinding{Pool: TKEPoolNamespace + "/pool-a", Protocol: "UDP", ContainerPort: 8000, LoadBalancerID: "lb-1", Region: "ap-chengdu",
		VIPs: []string{"1.1.1.1"}, Port: 30000, EndPort: 30009, ListenerIDs: map[string]string{"UDP": "lbl-1"}}
	cases := map[string]struct {
		reason  string
		version string
		backend string
		key     string
		want    string
	}{
		"IPv4": {reason: "ipv4, lower case as DescribeLoadBalancers answers", version: "ipv4", backend: v1alpha1.BackendPodIP, key: TKEAnnotationMappingResult,
			want: `[{"port":8000,"protocol":"UDP","pool":"pool-a","region":"ap-chengdu","loadbalancerId":"lb-1","loadbalancerPort":30000,` +
				`"loadbalancerEndPort":30009,"listenerId":"lbl-1","addressIPVersion":"ipv4","endPort":8009,"ips":["1.1.1.1"],"address":"1.1.1.1:30000"}]`},
		"IPv6": {reason: "ipv6 as the cloud spells it", version: "ipv6", backend: v1alpha1.BackendPodIP, key: TKEAnnotationMappingResult,
			want: `[{"port":8000,"protocol":"UDP","pool":"pool-a","region":"ap-chengdu","loadbalancerId":"lb-1","loadbalancerPort":30000,` +
				`"loadbalancerEndPort":30009,"listenerId":"lbl-1","addressIPVersion":"ipv6","endPort":8009,"ips":["1.1.1.1"],"address":"1.1.1.1:30000"}]`},
		"Unknown": {reason: "a binding made before the version was known has none", backend: v1alpha1.BackendPodIP, key: TKEAnnotationMappingResult,
			want: `[{"port":8000,"protocol":"UDP","pool":"pool-a","region":"ap-chengdu","loadbalancerId":"lb-1","loadbalancerPort":30000,` +
				`"loadbalancerEndPort":30009,"listenerId":"lbl-1","endPort":8009,"ips":["1.1.1.1"],"address":"1.1.1.1:30000"}]`},
		"HostPort": {reason: "tke-extend's hostPort result has no such field", version: "ipv4", backend: v1alpha1.BackendHostPort, key: TKEAnnotationHostPortMappingResult,
			want: `[{"containerPort":8000,"hostPort":0,"protocol":"UDP","pool":"pool-a","region":"ap-chengdu","loadbalancerId":"lb-1",` +
				`"loadbalancerPort":30000,"listenerId":"lbl-1","address":"1.1.1.1:30000","ips":["1.1.1.1"]}]`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := seg
			b.AddressIPVersion = tc.version
			ports := []v1alpha1.PortRequest{{Port: num(8000), Protocol: "UDP", Pools: tkePools("pool-a")}}
			got := TKEResultAnnotations(ports, tc.backend, []v1alpha1.PortBinding{b}, true)
			if diff := cmp.Diff(tc.want, got[tc.key]); diff != "" {
				t.Errorf("%s\n%s: -want, +got:\n%s", tc.reason, tc.key, diff)
			}
		})
	}
}

// TestTKEResultCertID: a TCP_SSL port with its own certificate (its
// certSecret's) has certId after protocol, where tke-extend writes it;
// one served by the pool's has none.
func TestTKEResultCertID(t *testing.T) {
	b := v1alpha1.PortBinding{Pool: TKEPoolNamespace + "/pool-a", Protocol: "TCP_SSL", ContainerPort: 443, LoadBalancerID: "lb-1", Region: "ap-guangzhou",
		VIPs: []string{"1.1.1.1"}, Port: 30000, ListenerIDs: map[string]string{"TCP_SSL": "lbl-1"}, CertID: "cert-1"}
	ports := []v1alpha1.PortRequest{{Port: num(443), Protocol: "TCP_SSL", Pools: tkePools("pool-a"), CertSecret: "game-cert"}}
	got := TKEResultAnnotations(ports, v1alpha1.BackendPodIP, []v1alpha1.PortBinding{b}, true)[TKEAnnotationMappingResult]
	want := `[{"port":443,"protocol":"TCP_SSL","certId":"cert-1","pool":"pool-a","region":"ap-guangzhou","loadbalancerId":"lb-1","loadbalancerPort":30000,` +
		`"listenerId":"lbl-1","ips":["1.1.1.1"],"address":"1.1.1.1:30000"}]`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tke-extend result: -want, +got:\n%s", diff)
	}
	b.CertID = ""
	if got := TKEResultAnnotations(ports, v1alpha1.BackendPodIP, []v1alpha1.PortBinding{b}, true)[TKEAnnotationMappingResult]; strings.Contains(got, "certId") {
		t.Errorf("the pool's certificate is in the result: %s", got)
	}
}

// TestIPv6Addresses: a binding on an IPv6 load balancer. tke-extend v2.5.2
// writes its result's address as "<ip>:<port>" whatever the family (its
// controller formats "%s:%d"), so an IPv6 VIP is not bracketed there:
// matched byte for byte. Our own address annotation brackets it, as a URL
// does ("[ip]:port"), so clients can split host and port.
func TestIPv6Addresses(t *testing.T) {
	b := v1alpha1.PortBinding{Pool: TKEPoolNamespace + "/pool-a", Protocol: "TCP", ContainerPort: 80, LoadBalancerID: "lb-1", Region: "ap-guangzhou",
		VIPs: []string{"fdc1:b000::1"}, Port: 30000, ListenerIDs: map[string]string{"TCP": "lbl-1"}, AddressIPVersion: "ipv6", IPv6Mode: "IPv6FullChain"}
	ports := []v1alpha1.PortRequest{{Port: num(80), Protocol: "TCP", Pools: tkePools("pool-a")}}
	got := TKEResultAnnotations(ports, v1alpha1.BackendPodIP, []v1alpha1.PortBinding{b}, true)[TKEAnnotationMappingResult]
	want := `[{"port":80,"protocol":"TCP","pool":"pool-a","region":"ap-guangzhou","loadbalancerId":"lb-1","loadbalancerPort":30000,` +
		`"listenerId":"lbl-1","addressIPVersion":"ipv6","ips":["fdc1:b000::1"],"address":"fdc1:b000::1:30000"}]`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tke-extend result: -want, +got:\n%s", diff)
	}
	ours := Addresses([]v1alpha1.PortBinding{b})
	if len(ours) != 1 || ours[0].Address != "[fdc1:b000::1]:30000" {
		t.Errorf("our address annotation: %+v, want [fdc1:b000::1]:30000", ours)
	}
	b.EndPort = 30009
	if got := FormatAddress(b.VIPs[0], b.Port, b.EndPort); got != "[fdc1:b000::1]:30000-30009" {
		t.Errorf("a segment's address: %q", got)
	}
}

// TestTKEResultLongSegment: a segment of tke-extend's multi-ISP guide
// (10001 ports) is told as tke-extend tells it: loadbalancerEndPort the
// segment's last public port, endPort the last container port it
// forwards to.
func TestTKEResultLongSegment(t *testing.T) {
	b := v1alpha1.PortBinding{Pool: TKEPoolNamespace + "/pool-ctcc", Protocol: "UDP", ContainerPort: 7000, LoadBalancerID: "lb-1", Region: "ap-chengdu",
		VIPs: []string{"1.1.1.1"}, Port: 40001, EndPort: 50001, ListenerIDs: map[string]string{"UDP": "lbl-1"}}
	ports := []v1alpha1.PortRequest{{Port: num(7000), Protocol: "UDP", Pools: tkePools("pool-ctcc")}}
	got := TKEResultAnnotations(ports, v1alpha1.BackendPodIP, []v1alpha1.PortBinding{b}, true)
	want := `[{"port":7000,"protocol":"UDP","pool":"pool-ctcc","region":"ap-chengdu","loadbalancerId":"lb-1","loadbalancerPort":40001,` +
		`"loadbalancerEndPort":50001,"listenerId":"lbl-1","endPort":17000,"ips":["1.1.1.1"],"address":"1.1.1.1:40001"}]`
	if diff := cmp.Diff(want, got[TKEAnnotationMappingResult]); diff != "" {
		t.Errorf("%s: -want, +got:\n%s", TKEAnnotationMappingResult, diff)
	}
}
