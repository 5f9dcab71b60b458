package emulator

import (
	"errors"
	"hash/fnv"
	"net/netip"
)

func parseIPv4(s string) (uint32, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return 0, err
	}
	if !a.Is4() {
		return 0, errors.New("not an IPv4 address: " + s)
	}
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]), nil
}

func formatIPv4(v uint32) string {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).String()
}

// allocVIP hands out the next free pool address. The cursor moves forward
// so a released VIP is not reused at once, as on the real cloud, where a
// new instance rarely inherits a just-released address. Addresses ending
// in .0 or .255 are skipped because they look like network or broadcast
// addresses. Called with e.mu held.
func (e *Emulator) allocVIP(lbID string) (string, *apiError) {
	base, _ := parseIPv4(e.cfg.VIPBase) // validated in New
	size := e.cfg.VIPPoolSize
	for i := 0; i < size; i++ {
		idx := (e.st.vipCursor + i) % size
		v := base + uint32(idx)
		if last := v & 0xff; last == 0 || last == 0xff {
			continue
		}
		ip := formatIPv4(v)
		if _, used := e.st.vips[ip]; used {
			continue
		}
		e.st.vipCursor = (idx + 1) % size
		e.st.vips[ip] = lbID
		return ip, nil
	}
	return "", errorf(codeResourceInsufficient, "No VIP is left in the pool of %d addresses from %s.", size, e.cfg.VIPBase)
}

// IPv6Mode of an IPv6 load balancer as DescribeLoadBalancers answers it:
// CreateLoadBalancer's AddressIPVersion IPV6 makes a NAT64 one (IPv6 VIP,
// IPv4 targets), IPv6FullChain a full-chain one (IPv6 targets).
const (
	ipv6ModeNAT64     = "IPv6Nat64"
	ipv6ModeFullChain = "IPv6FullChain"
)

// parseULA parses a unique local IPv6 address (fd00::/8), the only kind
// the emulator hands to IPv6 load balancers: one is never routed off a
// host, so a data plane cannot send a test's packets to another machine.
func parseULA(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, err
	}
	if !a.Is6() || a.Is4In6() || a.As16()[0] != 0xfd {
		return netip.Addr{}, errors.New("not a unique local IPv6 address (fd00::/8): " + s)
	}
	return a, nil
}

// allocVIP6 hands out the next free IPv6 pool address, as allocVIP does
// for IPv4: the pool's index is added to the base's last 32 bits.
// Called with e.mu held.
func (e *Emulator) allocVIP6(lbID string) (string, *apiError) {
	base, _ := parseULA(e.cfg.VIP6Base) // validated in New
	b := base.As16()
	low := uint32(b[12])<<24 | uint32(b[13])<<16 | uint32(b[14])<<8 | uint32(b[15])
	size := e.cfg.VIP6PoolSize
	for i := 0; i < size; i++ {
		idx := (e.st.vip6Cursor + i) % size
		v := low + uint32(idx) //nolint:gosec // G115: the pool size is an int below 2^32.
		b[12], b[13], b[14], b[15] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
		ip := netip.AddrFrom16(b).String()
		if _, used := e.st.vips[ip]; used {
			continue
		}
		e.st.vip6Cursor = (idx + 1) % size
		e.st.vips[ip] = lbID
		return ip, nil
	}
	return "", errorf(codeResourceInsufficient, "No IPv6 VIP is left in the pool of %d addresses from %s.", size, e.cfg.VIP6Base)
}

// releaseLB frees what a deleted load balancer held. Called with e.mu held.
func (e *Emulator) releaseLB(lb *lbState) {
	if e.st.vips[lb.VIP] == lb.ID {
		delete(e.st.vips, lb.VIP)
	}
}

// instanceIP resolves a CVM instance id to its primary private IP: from
// Config.Instances, or a stable made-up address in 10.0.0.0/8.
func (e *Emulator) instanceIP(id string) string {
	if ip, ok := e.cfg.Instances[id]; ok {
		return ip
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	v := h.Sum32()
	return formatIPv4(10<<24 | v&0x00ffff00 | ((v&0xff)%253 + 1))
}
