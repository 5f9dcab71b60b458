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

// The IPv6 tables of the same VM as /proc/net/ipv6_route prints them: the
// VM's own subnet fd00::/64 and default route on eth0, the real node's Pod
// range on its bridge, a VIP on lo (local table), a range through another
// gateway, an unreachable range and the kernel's null route.
const ipv6RouteTable = `fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0
fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000002 00000000 00000001     eth0
fdc10244000000000000000000000000 38 00000000000000000000000000000000 00 00000000000000000000000000000000 00000400 00000001 00000000 00000001 ptn-cni0
fdc10244000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001 ptn-cni0
fdc10999000000000000000000000000 40 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000001 00000000 00000003     eth0
fdc10998000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000400 00000001 00000000 00000201       lo
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0
00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo
fdc1b000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo
fd000000000000000000000000000002 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000003 00000000 80200001     eth0
ff000000000000000000000000000000 08 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000003 00000000 00000001     eth0
00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
`

func TestIPv6TargetsStayOnTheHost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ipv6_route")
	if err := os.WriteFile(path, []byte(ipv6RouteTable), 0o600); err != nil {
		t.Fatal(err)
	}
	rt := readIPv6Routes(path)
	for ip, want := range map[string]bool{
		"fdc1:244::5":                       true,  // a Pod on the node's bridge
		"fdc1:244:0:7::9":                   true,  // the Pod range, outside the node's subnet, still the bridge
		"fdc1:b000::1":                      true,  // a VIP on lo
		"fd00::7":                           false, // a neighbour on the default route's subnet
		"fd00::2":                           false, // this host's own eth0 address: on the default device (local addresses are found otherwise)
		"fe80::1":                           false, // link-local on the default device
		"fdc1:999::1":                       false, // through another gateway
		"fdc1:998::1":                       false, // unreachable
		"2001:db8::1":                       false, // the default route
		"fdc1:245::1":                       false, // no route but the default
		"ff02::1":                           false, // multicast, on the default device
		"::ffff:10.0.0.1":                   false, // not an IPv6 route
		"fdc1:244:0:ff:ffff:ffff:ffff:ffff": true,  // the last address of the Pod range
	} {
		if got := rt.local(netip.MustParseAddr(ip)); got != want {
			t.Errorf("local(%s) = %v, want %v", ip, got, want)
		}
	}
	if got := readIPv6Routes(filepath.Join(t.TempDir(), "missing")); got.local(netip.MustParseAddr("fdc1:244::5")) {
		t.Error("with no table, a non-loopback target was taken as local")
	}
	// The same prefix in two tables: one through a gateway is enough to refuse.
	twice := ipv6RouteTable + "fdc10244000000000000000000000000 40 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000001 00000000 00000003     eth0\n"
	if err := os.WriteFile(path, []byte(twice), 0o600); err != nil {
		t.Fatal(err)
	}
	if readIPv6Routes(path).local(netip.MustParseAddr("fdc1:244::5")) {
		t.Error("a Pod address also routed through a gateway was taken as local")
	}
}

func TestPlanRefusesAnOffHostIPv6Target(t *testing.T) {
	p := New(t.Logf)
	defer p.Close()
	// fd00::/8 on this machine is either unrouted or the VM's own subnet
	// behind the default route: refused either way.
	_, errs := p.plan([]Route{{VIP: "127.0.0.1", Protocol: "TCP", Port: 40000, Targets: []Target{{IP: "fd00::7", Port: 7777, Weight: 10}, {IP: "::1", Port: 7777, Weight: 10}}}})
	if len(errs) != 1 {
		t.Fatalf("errors %v, want one refusing fd00::7", errs)
	}
}
