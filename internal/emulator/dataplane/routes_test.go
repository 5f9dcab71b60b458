package dataplane

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

// The table of a VM whose default route leaves through eth0, with a Pod
// bridge and a Service range routed to lo, as the real node sets it up.
const routeTable = `Iface	Destination	Gateway 	Flags	RefCnt	Use	Metric	Mask		MTU	Window	IRTT
eth0	00000000	010200C0	0003	0	0	0	00000000	0	0	0
eth0	000200C0	00000000	0001	0	0	0	00FFFFFF	0	0	0
cni0	0000F40A	00000000	0001	0	0	0	00FFFFFF	0	0	0
lo	0000600A	00000000	0001	0	0	0	0000F0FF	0	0	0
eth0	0000A8C0	FE0200C0	0003	0	0	0	0000FFFF	0	0	0
`

func TestTargetsStayOnTheHost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "route")
	if err := os.WriteFile(path, []byte(routeTable), 0o600); err != nil {
		t.Fatal(err)
	}
	rt := readRoutes(path)
	for ip, want := range map[string]bool{
		"10.244.0.7":  true,  // the Pod bridge
		"10.96.0.10":  true,  // a Service address routed to lo
		"192.0.2.9":   false, // a neighbour on the default route's subnet
		"8.8.8.8":     false, // through the default gateway
		"192.168.3.4": false, // through another gateway
		"10.245.0.1":  false, // no route but the default
	} {
		if got := rt.local(netip.MustParseAddr(ip)); got != want {
			t.Errorf("local(%s) = %v, want %v", ip, got, want)
		}
	}
	if got := readRoutes(filepath.Join(t.TempDir(), "missing")); got.local(netip.MustParseAddr("10.244.0.7")) {
		t.Error("with no table, a non-loopback target was taken as local")
	}
}

func TestPlanRefusesAnOffHostTarget(t *testing.T) {
	p := New(t.Logf)
	defer p.Close()
	// TEST-NET-1: on the default device's subnet here, through a gateway elsewhere.
	_, errs := p.plan([]Route{{VIP: "127.0.0.1", Protocol: "TCP", Port: 40000, Targets: []Target{{IP: "192.0.2.200", Port: 7777, Weight: 10}, {IP: "127.0.0.1", Port: 7777, Weight: 10}}}})
	if len(errs) != 1 {
		t.Fatalf("errors %v, want one refusing 192.0.2.200", errs)
	}
}
