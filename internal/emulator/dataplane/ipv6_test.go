package dataplane

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

// echoTCPAt serves one echo listener on ip (any port) whose answers are
// "<name>:<line>", and returns its port.
func echoTCPAt(t *testing.T, ip, name string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64)
				n, _ := c.Read(buf)
				_, _ = c.Write([]byte(name + ":" + strings.TrimSpace(string(buf[:n])) + "\n"))
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().(*net.TCPAddr).Port
}

// TestEmulatorIPv6LoadBalancers drives the emulator through the SDK: an
// IPv6 (NAT64) load balancer carries TCP and UDP from its IPv6 VIP to an
// IPv4 target, an IPv6FullChain one from its IPv6 VIP to an IPv6 target.
// The VIPs are the emulator's pool (VIP6Base), put on lo by the test.
func TestEmulatorIPv6LoadBalancers(t *testing.T) {
	addrs := emulatortest.LocalIPv6(t, 3) // two VIPs, and the FullChain target
	p, _ := newPlane(t)
	cfg := emulator.Config{
		DataPlane: ForEmulator(p),
		VIPBase:   "127.3.8.1", // apart from the other tests' VIPs
		VIP6Base:  addrs[0].String(), VIP6PoolSize: 2,
	}
	_, endpoint := emulatortest.Start(t, cfg)
	c := emulatortest.DefaultClient(t, endpoint)

	create := func(version string, subnet *string) (string, string) {
		t.Helper()
		req := clb.NewCreateLoadBalancerRequest()
		req.LoadBalancerType, req.AddressIPVersion, req.SubnetId = common.StringPtr("OPEN"), &version, subnet
		resp, err := c.CreateLoadBalancer(req)
		if err != nil {
			t.Fatal(err)
		}
		id := *resp.Response.LoadBalancerIds[0]
		d := clb.NewDescribeLoadBalancersRequest()
		d.LoadBalancerIds = []*string{&id}
		got, err := c.DescribeLoadBalancers(d)
		if err != nil {
			t.Fatal(err)
		}
		lb := got.Response.LoadBalancerSet[0]
		if lb.AddressIPv6 == nil || len(lb.LoadBalancerVips) != 0 {
			t.Fatalf("%s load balancer: AddressIPv6 %v, LoadBalancerVips %v", version, lb.AddressIPv6, common.StringValues(lb.LoadBalancerVips))
		}
		return id, *lb.AddressIPv6
	}
	listen := func(lbID, vip, proto string) (string, int) {
		t.Helper()
		port := freeRange(t, vip, 1)
		req := clb.NewCreateListenerRequest()
		req.LoadBalancerId, req.Protocol, req.Ports = &lbID, &proto, common.Int64Ptrs([]int64{int64(port)})
		resp, err := c.CreateListener(req)
		if err != nil {
			t.Fatal(err)
		}
		return *resp.Response.ListenerIds[0], port
	}
	register := func(lbID, listenerID, ip string, port int) error {
		req := clb.NewRegisterTargetsRequest()
		req.LoadBalancerId, req.ListenerId = &lbID, &listenerID
		req.Targets = []*clb.Target{{EniIp: &ip, Port: common.Int64Ptr(int64(port))}}
		_, err := c.RegisterTargets(req)
		return err
	}

	// IPv6 NAT64: IPv6 VIP, IPv4 target.
	nat, natVIP := create("IPV6", nil)
	if natVIP != addrs[0].String() {
		t.Fatalf("first IPv6 VIP %s, want the pool's first address %s", natVIP, addrs[0])
	}
	v4 := echoTCP(t, "v4-", 1)
	tcp, tcpPort := listen(nat, natVIP, "TCP")
	if err := register(nat, tcp, "127.0.0.1", v4); err != nil {
		t.Fatal(err)
	}
	if got := askTCP(t, hostPort(natVIP, tcpPort), "nat64"); got != "v4-0:nat64" {
		t.Fatalf("TCP through [%s]:%d: %q", natVIP, tcpPort, got)
	}
	v4u := echoUDP(t, "u4-", 1)
	udp, udpPort := listen(nat, natVIP, "UDP")
	if err := register(nat, udp, "127.0.0.1", v4u); err != nil {
		t.Fatal(err)
	}
	if got := askUDP(t, dialUDP(t, hostPort(natVIP, udpPort)), "dgram"); got != "u4-0:dgram" {
		t.Fatalf("UDP through [%s]:%d: %q", natVIP, udpPort, got)
	}

	// IPv6FullChain: IPv6 VIP, IPv6 target (a Pod's address).
	full, fullVIP := create("IPv6FullChain", common.StringPtr("subnet-v6"))
	if fullVIP != addrs[1].String() {
		t.Fatalf("second IPv6 VIP %s, want %s", fullVIP, addrs[1])
	}
	pod := echoTCPAt(t, addrs[2].String(), "pod6")
	l6, port6 := listen(full, fullVIP, "TCP")
	if err := register(full, l6, "127.0.0.1", v4); err == nil {
		t.Fatal("an IPv4 target was registered on an IPv6FullChain load balancer")
	}
	if err := register(full, l6, addrs[2].String(), pod); err != nil {
		t.Fatal(err)
	}
	if got := askTCP(t, hostPort(fullVIP, port6), "full"); got != "pod6:full" {
		t.Fatalf("TCP through [%s]:%d: %q", fullVIP, port6, got)
	}
}

// TestIPv6StaysOnTheHost: the plane serves no IPv6 VIP that is not a
// unique local address, cannot bind one that is not on a local device,
// and dials no IPv6 target that is not this host's; other routes apply.
func TestIPv6StaysOnTheHost(t *testing.T) {
	addrs := emulatortest.LocalIPv6(t, 1)
	vip := addrs[0].String()
	p, rec := newPlane(t)
	port := freeRange(t, vip, 2)
	// Inside the test's own range but never added to lo.
	absent := addrs[0].Next().Next().String()
	pod := echoTCPAt(t, "::1", "lo6")
	err := p.Apply([]Route{
		{VIP: "2001:db8::1", Protocol: "TCP", Port: 80, Targets: []Target{{IP: "::1", Port: pod, Weight: 1}}},
		{VIP: absent, Protocol: "TCP", Port: 80, Targets: []Target{{IP: "::1", Port: pod, Weight: 1}}},
		{VIP: vip, Protocol: "TCP", Port: port, Targets: []Target{{IP: absent, Port: 80, Weight: 1}}},
		{VIP: vip, Protocol: "TCP", Port: port + 1, Targets: []Target{{IP: "::1", Port: pod, Weight: 1}}},
	})
	if n := rec.count("2001:db8::1"); n != 1 {
		t.Errorf("the global VIP was logged %d times, want once as skipped", n)
	}
	if !errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Errorf("a VIP on no local device: want EADDRNOTAVAIL, got %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "target "+absent+" is neither an address of this host") {
		t.Errorf("error %v does not refuse the off-host target %s", err, absent)
	}
	if got := askTCP(t, hostPort(vip, port+1), "x"); got != "lo6:x" {
		t.Fatalf("the valid route: %q", got)
	}
	// The route whose only target was refused has no target: the
	// connection is closed at once, nothing is dialled.
	c := dialTCP(t, hostPort(vip, port))
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read %d bytes from a route with no target", n)
	}
}
