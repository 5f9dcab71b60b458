package dataplane

import (
	"encoding/hex"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// hostRoutes is one family's routing table of the host (/proc/net/route,
// /proc/net/ipv6_route), read to keep every packet on the machine: a
// target reached through a gateway, or through the device of a default
// route, would leave it.
type hostRoutes struct {
	routes []hostRoute
	// defaults are the devices of the default routes, whose subnets hold
	// other machines.
	defaults map[string]bool
}

type hostRoute struct {
	device  string
	prefix  netip.Prefix
	gateway bool // through a next hop
	reject  bool // unreachable, prohibit: nothing is sent, nothing to dial
}

// Route flags the kernel prints in both files (linux/route.h, ipv6_route.h).
const (
	rtfGateway = 0x2
	rtfReject  = 0x200
)

func (rt *hostRoutes) add(r hostRoute) {
	if rt.defaults == nil {
		rt.defaults = map[string]bool{}
	}
	if r.prefix.Bits() == 0 && !r.reject {
		rt.defaults[r.device] = true
	}
	rt.routes = append(rt.routes, r)
}

// readRoutes parses the kernel's IPv4 table; an unreadable one gives no
// routes, so that nothing but loopback and local addresses is dialled.
func readRoutes(path string) hostRoutes {
	var rt hostRoutes
	b, err := os.ReadFile(path) //nolint:gosec // G304: a fixed kernel file.
	if err != nil {
		return rt
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		dst, err1 := strconv.ParseUint(f[1], 16, 32)
		flags, err2 := strconv.ParseUint(f[3], 16, 32)
		mask, err3 := strconv.ParseUint(f[7], 16, 32)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		// The file holds addresses in the host's (little-endian) order.
		le := func(v uint64) [4]byte { return [4]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }
		m := le(mask)
		bits := 0
		for _, x := range m {
			for ; x&0x80 != 0; x <<= 1 {
				bits++
			}
		}
		rt.add(hostRoute{device: f[0], prefix: netip.PrefixFrom(netip.AddrFrom4(le(dst)), bits).Masked(),
			gateway: flags&rtfGateway != 0, reject: flags&rtfReject != 0})
	}
	return rt
}

// readIPv6Routes parses the kernel's IPv6 tables (every table, the local
// one included); an unreadable file gives no routes.
func readIPv6Routes(path string) hostRoutes {
	var rt hostRoutes
	b, err := os.ReadFile(path) //nolint:gosec // G304: a fixed kernel file.
	if err != nil {
		return rt
	}
	// dst dst_len src src_len next_hop metric refcnt use flags device
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		dst, err1 := hex.DecodeString(f[0])
		bits, err2 := strconv.ParseUint(f[1], 16, 8)
		hop, err3 := hex.DecodeString(f[4])
		flags, err4 := strconv.ParseUint(f[8], 16, 32)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || len(dst) != 16 || bits > 128 {
			continue
		}
		a, _ := netip.AddrFromSlice(dst)
		nextHop, _ := netip.AddrFromSlice(hop)
		rt.add(hostRoute{device: f[9], prefix: netip.PrefixFrom(a, int(bits)).Masked(),
			gateway: flags&rtfGateway != 0 || (nextHop.IsValid() && !nextHop.IsUnspecified()), reject: flags&rtfReject != 0})
	}
	return rt
}

// local reports whether the most specific routes to a stay on the
// machine: none through a gateway, none a reject route, none on the
// device of a default route (whose subnet holds other machines), and not
// the default route itself. When several tables or metrics hold a route of
// that length, every one must stay.
func (rt hostRoutes) local(a netip.Addr) bool {
	best := -1
	for _, r := range rt.routes {
		if r.prefix.Contains(a) && r.prefix.Bits() > best {
			best = r.prefix.Bits()
		}
	}
	if best <= 0 {
		return false
	}
	for _, r := range rt.routes {
		if r.prefix.Bits() == best && r.prefix.Contains(a) && (r.gateway || r.reject || rt.defaults[r.device]) {
			return false
		}
	}
	return true
}
