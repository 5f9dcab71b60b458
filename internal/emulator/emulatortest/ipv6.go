package emulatortest

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// LocalIPv6 puts n consecutive unique local IPv6 addresses on the
// loopback device for the duration of the test and returns them. IPv6
// has one loopback address (::1), so the data plane's IPv6 VIPs and the
// sockets standing in for IPv6 Pods need addresses a test adds: on lo,
// a packet to them never leaves the host. Each test takes its own range,
// fdc1:b0PP:PPPP:NNNN::/64 with the process id P and a hash N of the
// test's name, so tests and test binaries running at once do not share
// addresses (call it once per test). It needs
// CAP_NET_ADMIN and the ip command, and fails the test without them.
func LocalIPv6(t testing.TB, n int) []netip.Addr {
	t.Helper()
	pid := os.Getpid()
	h := fnv.New32a()
	h.Write([]byte(t.Name()))
	base := netip.MustParseAddr(fmt.Sprintf("fdc1:%x:%x:%x::1", 0xb000|(pid>>16)&0xfff, pid&0xffff, h.Sum32()&0xffff))
	out := make([]netip.Addr, 0, n)
	for a := base; len(out) < n; a = a.Next() {
		out = append(out, a)
	}
	OnLoopback(t, out...)
	return out
}

// OnLoopback puts IPv6 addresses on lo for the duration of the test:
// an emulated load balancer's VIP the test did not choose, say, so that
// the data plane can bind it. It needs CAP_NET_ADMIN and the ip command.
func OnLoopback(t testing.TB, addrs ...netip.Addr) {
	t.Helper()
	for _, a := range addrs {
		if !a.Is6() || a.Is4In6() || a.As16()[0] != 0xfd {
			t.Fatalf("%s is not a unique local IPv6 address (fd00::/8): only those go on lo", a)
		}
		// nodad: duplicate address detection would keep the address
		// unbindable ("tentative") for a second.
		if b, err := exec.Command("ip", "-6", "addr", "replace", a.String()+"/128", "dev", "lo", "nodad").CombinedOutput(); err != nil {
			t.Fatalf("add %s to lo (needs CAP_NET_ADMIN and the ip command): %v: %s", a, err, strings.TrimSpace(string(b)))
		}
		t.Cleanup(func() {
			if b, err := exec.Command("ip", "-6", "addr", "del", a.String()+"/128", "dev", "lo").CombinedOutput(); err != nil {
				t.Errorf("remove %s from lo: %v: %s", a, err, strings.TrimSpace(string(b)))
			}
		})
	}
}
