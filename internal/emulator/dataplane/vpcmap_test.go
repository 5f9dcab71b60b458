package dataplane

import (
	"net"
	"net/netip"
	"testing"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

// TestEmulatorVPCLoopbackCIDR registers a Pod-like VPC address, 10.66.0.7,
// with an emulator that maps 10.0.0.0/8 onto loopback: a connection to the
// VIP reaches the server on 127.66.0.7, which the cloud never shows.
func TestEmulatorVPCLoopbackCIDR(t *testing.T) {
	p, _ := newPlane(t)
	cfg := emulator.Config{
		DataPlane:       ForEmulator(p),
		VPCLoopbackCIDR: netip.MustParsePrefix("10.0.0.0/8"),
		VIPBase:         "127.3.0.1", // apart from the other tests' VIPs
	}
	e, endpoint := emulatortest.Start(t, cfg)
	c := emulatortest.DefaultClient(t, endpoint)

	// The Pod's server, on the mapped address only.
	srv, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 66, 0, 7)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	go func() {
		for {
			conn, err := srv.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				buf := make([]byte, 64)
				n, _ := conn.Read(buf)
				_, _ = conn.Write(append([]byte("pod:"), buf[:n]...))
			}()
		}
	}()
	podPort := int64(srv.Addr().(*net.TCPAddr).Port)

	lbReq := clb.NewCreateLoadBalancerRequest()
	lbReq.LoadBalancerType = common.StringPtr("OPEN")
	lbResp, err := c.CreateLoadBalancer(lbReq)
	if err != nil {
		t.Fatal(err)
	}
	lbID := *lbResp.Response.LoadBalancerIds[0]
	vip := e.Inventory().LoadBalancers[0].VIP
	port := int64(freeRange(t, vip, 1))
	lisReq := clb.NewCreateListenerRequest()
	lisReq.LoadBalancerId, lisReq.Protocol, lisReq.Ports = &lbID, common.StringPtr("TCP"), common.Int64Ptrs([]int64{port})
	lisResp, err := c.CreateListener(lisReq)
	if err != nil {
		t.Fatal(err)
	}
	reg := clb.NewRegisterTargetsRequest()
	reg.LoadBalancerId, reg.ListenerId = &lbID, lisResp.Response.ListenerIds[0]
	reg.Targets = []*clb.Target{{EniIp: common.StringPtr("10.66.0.7"), Port: &podPort}}
	if _, err := c.RegisterTargets(reg); err != nil {
		t.Fatal(err)
	}

	conn := dialTCP(t, hostPort(vip, int(port)))
	if _, err := conn.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no answer through %s:%d: %v", vip, port, err)
	}
	if got := string(buf[:n]); got != "pod:hi" {
		t.Fatalf("answer %q, want %q", got, "pod:hi")
	}
}
