package node

import (
	"encoding/json"
	"net/netip"
	"testing"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// The IPv6 Pod range is ours alone: not this VM's own network, not the
// emulator's VIPs (whose sockets sit on lo), and the node's subnet is in it.
func TestIPv6PodRangeIsApart(t *testing.T) {
	vip := netip.MustParseAddr(emulator.DefaultVIP6Base)
	for _, p := range []netip.Prefix{
		netip.MustParsePrefix("fd00::/64"),     // eth0 of this kind of VM
		netip.PrefixFrom(vip, 20).Masked(),     // the emulator's VIPs and emulatortest.LocalIPv6
		netip.MustParsePrefix("fe80::/10"),     // link-local
		netip.MustParsePrefix("2000::/3"),      // global unicast
		netip.MustParsePrefix("::ffff:0:0/96"), // IPv4-mapped
	} {
		if p.Overlaps(PodCIDR6()) {
			t.Errorf("the IPv6 Pod range %s overlaps %s", PodCIDR6(), p)
		}
	}
	if !PodCIDR6().Contains(NodePodCIDR6().Addr()) || NodePodCIDR6().Bits() < PodCIDR6().Bits() {
		t.Errorf("the node's subnet %s is not inside the Pod range %s", NodePodCIDR6(), PodCIDR6())
	}
}

func TestLast(t *testing.T) {
	for p, want := range map[string]string{
		"10.244.0.0/16":   "10.244.255.255",
		"10.0.0.0/24":     "10.0.0.255",
		"fdc1:244::/56":   "fdc1:244:0:ff:ffff:ffff:ffff:ffff",
		"fdc1:244::/64":   "fdc1:244::ffff:ffff:ffff:ffff",
		"10.245.0.1/32":   "10.245.0.1",
		"fdc1:244::1/128": "fdc1:244::1",
	} {
		if got := last(netip.MustParsePrefix(p)); got.String() != want {
			t.Errorf("last(%s) = %s, want %s", p, got, want)
		}
	}
}

// Each Pod gets one address of each family from the node's subnets, and
// routes to the node's ranges only: no default route of either family.
func TestCNIGivesDualStackAddresses(t *testing.T) {
	n := &Node{dir: "/var/lib/ptn-node-test"}
	var conf struct {
		Plugins []struct {
			Type string `json:"type"`
			IPAM struct {
				Ranges [][]struct {
					Subnet string `json:"subnet"`
				} `json:"ranges"`
				Routes []struct {
					Dst string `json:"dst"`
				} `json:"routes"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(n.cniConfig()), &conf); err != nil {
		t.Fatal(err)
	}
	ipam := conf.Plugins[0].IPAM
	if len(ipam.Ranges) != 2 || len(ipam.Ranges[0]) != 1 || len(ipam.Ranges[1]) != 1 ||
		ipam.Ranges[0][0].Subnet != NodePodCIDR().String() || ipam.Ranges[1][0].Subnet != NodePodCIDR6().String() {
		t.Errorf("IPAM ranges %+v, want one of %s and one of %s", ipam.Ranges, NodePodCIDR(), NodePodCIDR6())
	}
	dsts := map[string]bool{}
	for _, r := range ipam.Routes {
		p := netip.MustParsePrefix(r.Dst)
		if p.Bits() == 0 {
			t.Errorf("a default route %s for Pods", p)
		}
		dsts[p.String()] = true
	}
	for _, want := range []netip.Prefix{PodCIDR(), PodCIDR6(), ServiceCIDR()} {
		if !dsts[want.String()] {
			t.Errorf("Pods get no route to %s: %v", want, dsts)
		}
	}
}
