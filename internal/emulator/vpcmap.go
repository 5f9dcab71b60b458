package emulator

import (
	"errors"
	"fmt"
	"net/netip"
)

// The emulated VPC's private addresses are not routable on a test host, and
// Kubernetes refuses loopback addresses in EndpointSlices. With
// Config.VPCLoopbackCIDR a target inside that CIDR is reached at the
// loopback address with the same last three octets (10.1.2.3 becomes
// 127.1.2.3): the cloud API keeps showing the VPC address, only the data
// plane's and the health probes' sockets use the loopback one.

// checkVPCLoopbackCIDR accepts the zero Prefix (off) or an IPv4 prefix of
// length 8 to 32: replacing the first octet keeps addresses of such a
// prefix apart, and a shorter one would fold several onto one address.
func checkVPCLoopbackCIDR(p netip.Prefix) error {
	switch {
	case p == netip.Prefix{}:
		return nil
	case !p.IsValid() || !p.Addr().Is4():
		return fmt.Errorf("%v is not an IPv4 prefix", p)
	case p.Bits() < 8:
		return fmt.Errorf("%v is shorter than /8: its addresses would share loopback addresses", p)
	case p.Masked() != p:
		return fmt.Errorf("%v has host bits set (want %v)", p, p.Masked())
	case p.Addr().As4()[0] == 127:
		return errors.New("the prefix is already loopback")
	}
	return nil
}

// socketIP returns the address the emulator's sockets use for the target
// address ip: its loopback image when ip is inside VPCLoopbackCIDR, ip
// itself otherwise (including when it is not an address).
func (c *Config) socketIP(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || !c.VPCLoopbackCIDR.IsValid() || !c.VPCLoopbackCIDR.Contains(a.Unmap()) {
		return ip
	}
	b := a.Unmap().As4()
	b[0] = 127
	return netip.AddrFrom4(b).String()
}
