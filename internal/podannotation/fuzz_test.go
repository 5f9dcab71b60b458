package podannotation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzParse feeds arbitrary annotation values to Parse and ResolvePort. It
// must never panic, errors must say something, and an accepted request
// must be well formed and parse the same way twice. `go test` runs the
// seeds below.
func FuzzParse(f *testing.F) {
	seeds := []struct {
		ports string
		mode  uint8 // bit 0: bcs syntax; bits 1-4: which options to set
		opt   string
	}{
		{"8000 pool-a", 0, ""},
		{"8000/TCP_UDP pool-ctcc,pool-cmcc; voice/UDP relays/pool-a", 0, ""},
		{"\n 8000/tcp a, b \n;9000/quic x/y;", 0b11110, "5m"},
		{"8000/SCTP a", 0, ""},
		{"a,,b", 0, ""},
		{"8000/TCP/UDP a", 0b00010, "ordinal"},
		{"4294975296 a", 0, ""},
		{"8000 a,game/a", 0, ""},
		{"test-pool1 TCP 80", 1, ""},
		{"portpool1.ns1 TCP 8000/hostport", 1, "true"},
		{"portpool1.ns1 httpport", 0b11111, "2h45m"},
		{"portpool1.ns1 TCP 8000\nportpool1.ns1 UDP 8000\nportpool2.ns1 TCP 8080", 1, ""},
		{"portpool1.ns1 TCP 8000;portpool1.ns1 UDP 8000;portpool2.ns1 TCP 8080", 1, "-1s"},
		{"a.ns/item TCP 80", 1, ""},
		{"a.b.c TCP 80/hostport; b TCP 80", 1, ""},
		{"a TCP 80/nodeport", 1, "garbage"},
		{"a game-tcp", 1, ""},
		{";;;\n\r\n", 1, ""},
		{"\xff\xfe 8000 \x00", 0, "\x00"},
		// tke-extend's syntax (bit 5; bit 6 adds opt as the hostPort lines).
		{"8000 UDP pool-test\n7000 TCPUDP pool-test", 1 << 5, ""},
		{"7000 TCPUDP pool-ctcc,pool-cmcc useSamePortAcrossPools", 1<<5 | 0b00010, "Ordinal"},
		{"8000 TCP_SSL pool-test certSecret=cert-secret", 1 << 5, ""},
		{"8000 UDP game/a,b", 1<<5 | 1<<6, "7654 TCPUDP node-pool\n8000 UDP x"},
		{"8000 udp a,,b certSecret=", 1<<5 | 1<<6, "\x00 tcp a"},
	}
	for _, s := range seeds {
		f.Add(s.ports, s.mode, s.opt)
	}
	f.Fuzz(func(t *testing.T, ports string, mode uint8, opt string) {
		a := map[string]string{}
		tke := mode&(1<<5) != 0
		switch {
		case tke:
			a[TKEAnnotationEnableMapping] = "true"
			a[TKEAnnotationPortMapping] = ports
			if mode&(1<<6) != 0 {
				a[TKEAnnotationEnableHostPortMapping] = "true"
				a[TKEAnnotationHostPortMapping] = opt
			}
		case mode&1 == 0:
			a[AnnotationPorts] = ports
		default:
			a[BCSAnnotationEnabled] = "true"
			a[BCSAnnotationPorts] = ports
		}
		for i, k := range []string{AnnotationStrategy, AnnotationBackend, AnnotationKeepDuration, BCSAnnotationKeepDuration} {
			if mode&(2<<i) != 0 {
				a[k] = opt
			}
		}
		p := roomPod()
		p.Annotations = a

		req, asked, err := Parse(p)
		if !asked {
			t.Fatal("a Pod with a ports annotation must count as asking")
		}
		if err != nil {
			if err.Error() == "" || req != nil {
				t.Fatalf("error %q with request %v", err, req)
			}
			return
		}
		again, _, _ := Parse(p)
		if diff := cmp.Diff(req, again); diff != "" {
			t.Fatalf("Parse is not deterministic: %s", diff)
		}
		if len(req.Ports) == 0 {
			t.Fatal("accepted a request with no ports")
		}
		for i := range req.HostPortFor {
			if i < 0 || i >= len(req.Ports) {
				t.Fatalf("HostPortFor index %d out of %d ports", i, len(req.Ports))
			}
		}
		for _, pr := range req.Ports {
			if len(pr.Pools) == 0 {
				t.Fatalf("port %s has no pools", pr.Port.String())
			}
			if pr.Protocol != "" {
				if _, ok := canonicalProtocol(pr.Protocol); !ok {
					t.Fatalf("accepted protocol %q", pr.Protocol)
				}
			}
			switch pr.Port.Type {
			case intstr.Int:
				if pr.Port.IntVal < 1 || pr.Port.IntVal > 65535 {
					t.Fatalf("accepted port %d", pr.Port.IntVal)
				}
			default:
				if errs := validation.IsValidPortName(pr.Port.StrVal); len(errs) > 0 {
					t.Fatalf("accepted port name %q: %v", pr.Port.StrVal, errs)
				}
			}
			for _, pool := range pr.Pools {
				if pool.Name == "" {
					t.Fatal("accepted an empty pool name")
				}
				if tke && pool.Namespace == "" {
					t.Fatalf("a tke-extend pool %q without a namespace", pool.Name)
				}
			}
			if tke && (pr.Port.Type != intstr.Int || pr.Protocol == "") {
				t.Fatalf("a tke-extend port %s/%q: want a number and a protocol", pr.Port.String(), pr.Protocol)
			}
			port, proto, _, err := ResolvePort(p, pr)
			switch {
			case err != nil && err.Error() == "":
				t.Fatal("ResolvePort returned an empty error")
			case err == nil && (port < 1 || proto == ""):
				t.Fatalf("ResolvePort gave port %d protocol %q", port, proto)
			}
		}
	})
}
