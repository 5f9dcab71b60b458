package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
)

// The node's fixed network. Fixed names let a later run find and remove
// what a killed one left behind; the lock in Start keeps runs apart.
const (
	// Bridge is the CNI bridge the Pods are attached to, made before
	// anything starts: the Pod and Service ranges are routed to it, so a
	// packet for an address no Pod or Service holds is dropped here instead
	// of following the default route out of the machine. (This machine's
	// kernel has no dummy devices; a bridge with no ports does the same.)
	Bridge = "ptn-cni0"
	// HostDevice holds the node's IP: another port-less bridge, because
	// the CNI bridge plugin refuses a bridge with an address other than
	// its gateway's.
	HostDevice = "ptn-node0"
	// Name is the node's name in the API.
	Name = "ptn-node"
	// guardChain drops whatever the host would forward from the bridge
	// to another interface.
	guardChain = "PTN-NODE-GUARD"
)

// The node's addresses. The Service range is the local API server's
// (--service-cluster-ip-range of internal/tooling/testenv).

// PodCIDR is the cluster's Pod range.
func PodCIDR() netip.Prefix { return netip.MustParsePrefix("10.244.0.0/16") }

// NodePodCIDR is the node's share of PodCIDR, on Bridge.
func NodePodCIDR() netip.Prefix { return netip.MustParsePrefix("10.244.0.0/24") }

// PodCIDR6 is the IPv6 part of the cluster's dual-stack Pod range: a
// unique local range of ours, apart from this VM's own IPv6 network
// (fd00::/64 on eth0 here) and from the emulator's IPv6 VIPs
// (fdc1:b000::/20, internal/emulator).
func PodCIDR6() netip.Prefix { return netip.MustParsePrefix("fdc1:244::/56") }

// NodePodCIDR6 is the node's share of PodCIDR6, on Bridge: every Pod gets
// an address of each family.
func NodePodCIDR6() netip.Prefix { return netip.MustParsePrefix("fdc1:244::/64") }

// ServiceCIDR is the cluster's Service range.
func ServiceCIDR() netip.Prefix { return netip.MustParsePrefix("10.0.0.0/24") }

// IP is the node's InternalIP, held by HostDevice: the API server and the
// registry are reached there, and it never leaves the machine.
func IP() netip.Addr { return netip.MustParseAddr("10.245.0.1") }

// ip runs the ip command.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// routeDev returns the device the kernel would send a packet for a through.
func routeDev(a netip.Addr) (string, error) {
	out, err := exec.Command("ip", "-j", "route", "get", a.String()).Output()
	if err != nil {
		// "unreachable"/"prohibit" routes make the command fail: nothing
		// leaves either.
		return "", fmt.Errorf("ip route get %s: %w", a, err)
	}
	var routes []struct {
		Dev  string `json:"dev"`
		Type string `json:"type"`
	}
	if err := json.Unmarshal(out, &routes); err != nil || len(routes) == 0 {
		return "", fmt.Errorf("ip route get %s: cannot read %q", a, out)
	}
	return routes[0].Dev, nil
}

// probes are the addresses checked with `ip route get`: both ends of each
// range and one in the middle of each Pod range outside the node's subnet.
func probes() []netip.Addr {
	var as []netip.Addr
	for _, p := range []netip.Prefix{PodCIDR(), ServiceCIDR(), PodCIDR6()} {
		as = append(as, p.Addr().Next(), last(p))
	}
	return append(as, netip.MustParseAddr("10.244.128.7"), netip.MustParseAddr("fdc1:244:0:80::7"),
		IP(), NodePodCIDR().Addr().Next(), NodePodCIDR6().Addr().Next())
}

// last is the last address of p, of either family.
func last(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// CheckRoutes confirms that no Pod address of either family, no Service
// address, nor the node's IP, is routed through a device other than the node's own or loopback.
func CheckRoutes() error {
	var errs []error
	for _, a := range probes() {
		dev, err := routeDev(a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if dev != Bridge && dev != HostDevice && dev != "lo" {
			errs = append(errs, fmt.Errorf("a packet for %s would leave through %s", a, dev))
		}
	}
	return errors.Join(errs...)
}

// checkFree refuses to start when another device already holds an address
// in the node's ranges: its routes could win over ours.
func checkFree() error {
	out, err := exec.Command("ip", "-j", "addr", "show").Output()
	if err != nil {
		return fmt.Errorf("ip addr show: %w", err)
	}
	var links []struct {
		Name  string `json:"ifname"`
		Addrs []struct {
			Local  string `json:"local"`
			Family string `json:"family"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return fmt.Errorf("ip addr show: %w", err)
	}
	for _, l := range links {
		if l.Name == Bridge || l.Name == HostDevice {
			continue
		}
		for _, a := range l.Addrs {
			addr, err := netip.ParseAddr(a.Local)
			if err != nil {
				continue
			}
			if PodCIDR().Contains(addr) || PodCIDR6().Contains(addr) || ServiceCIDR().Contains(addr) || addr == IP() {
				return fmt.Errorf("%s already holds %s, inside the node's ranges (Pods %s and %s, Services %s, node %s)", l.Name, addr, PodCIDR(), PodCIDR6(), ServiceCIDR(), IP())
			}
		}
	}
	return nil
}

// setUpNetwork makes the bridge with the Pods' gateways and the device of
// the node's IP, routes the node's ranges to the bridge,
// drops forwarding from the bridge to other devices in both families, and
// checks the result. The IPv6 gateway is added without duplicate address
// detection: on a bridge with no port yet it would stay tentative.
func setUpNetwork() error {
	if err := checkFree(); err != nil {
		return err
	}
	steps := [][]string{
		{"link", "add", Bridge, "type", "bridge"},
		{"link", "set", Bridge, "up"},
		{"link", "add", HostDevice, "type", "bridge"},
		{"link", "set", HostDevice, "up"},
		{"addr", "add", IP().String() + "/32", "dev", HostDevice},
		{"addr", "add", NodePodCIDR().Addr().Next().String() + "/24", "dev", Bridge},
		{"-6", "addr", "add", fmt.Sprintf("%s/%d", NodePodCIDR6().Addr().Next(), NodePodCIDR6().Bits()), "dev", Bridge, "nodad"},
		{"route", "add", PodCIDR().String(), "dev", Bridge},
		{"-6", "route", "add", PodCIDR6().String(), "dev", Bridge},
		{"route", "add", ServiceCIDR().String(), "dev", Bridge},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return err
		}
	}
	for _, cmd := range []string{"iptables", "ip6tables"} {
		for _, r := range [][]string{
			{"-N", guardChain},
			{"-A", guardChain, "-i", Bridge, "!", "-o", Bridge, "-j", "DROP"},
			{"-I", "FORWARD", "1", "-j", guardChain},
		} {
			if err := iptablesOf(cmd, "filter", r...); err != nil {
				return err
			}
		}
	}
	return CheckRoutes()
}

// tearDownNetwork removes the devices (their routes go with them). It is
// safe to call when some or none of them exist.
func tearDownNetwork() error {
	var errs []error
	for _, dev := range []string{Bridge, HostDevice} {
		if _, err := os.Stat("/sys/class/net/" + dev); err == nil {
			errs = append(errs, ip("link", "del", dev))
		}
	}
	return errors.Join(errs...)
}
