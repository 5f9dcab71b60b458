package emulator_test

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// TestVPCLoopbackCIDRRefused checks that New accepts only IPv4 prefixes of
// length 8 to 32 that are not loopback already.
func TestVPCLoopbackCIDRRefused(t *testing.T) {
	for _, p := range []string{"8.0.0.0/7", "10.1.2.0/8", "fd00::/8", "127.0.0.0/8"} {
		if e, err := emulator.New(emulator.Config{VPCLoopbackCIDR: netip.MustParsePrefix(p)}); err == nil {
			_ = e.Close()
			t.Errorf("VPCLoopbackCIDR %s accepted", p)
		}
	}
	for _, p := range []string{"10.0.0.0/8", "10.77.0.0/16", "10.77.0.5/32"} {
		e, err := emulator.New(emulator.Config{VPCLoopbackCIDR: netip.MustParsePrefix(p)})
		if err != nil {
			t.Errorf("VPCLoopbackCIDR %s: %v", p, err)
			continue
		}
		_ = e.Close()
	}
}

// TestVPCLoopbackCIDRProbesAndRoutes maps 10.77.0.0/16: a target inside it
// is probed, and routed, at 127.77.x.y, while the API keeps its own
// address; a target outside it (10.78.0.5) is neither mapped nor probed.
func TestVPCLoopbackCIDRProbesAndRoutes(t *testing.T) {
	cfg := instant()
	cfg.ProbeTargets = true
	cfg.VPCLoopbackCIDR = netip.MustParsePrefix("10.77.0.0/16")
	e, _, c := env(t, cfg)
	up, err := net.Listen("tcp", "127.77.0.5:0")
	must(t, err)
	t.Cleanup(func() { _ = up.Close() })
	upPort := int64(up.Addr().(*net.TCPAddr).Port)
	down, err := net.Listen("tcp", "127.77.0.5:0")
	must(t, err)
	downPort := int64(down.Addr().(*net.TCPAddr).Port)
	must(t, down.Close()) // nothing listens there any more

	lb := createLB(t, c, "vpcmap")
	tcp := createListeners(t, c, lb, "TCP", 80)[0]
	req := clb.NewBatchRegisterTargetsRequest()
	req.LoadBalancerId = &lb
	req.Targets = []*clb.BatchTarget{
		{ListenerId: &tcp, EniIp: common.StringPtr("10.77.0.5"), Port: common.Int64Ptr(upPort)},
		{ListenerId: &tcp, EniIp: common.StringPtr("10.77.0.5"), Port: common.Int64Ptr(downPort)},
		// Probed at 127.78.0.5 it would be Dead: nothing listens there.
		{ListenerId: &tcp, EniIp: common.StringPtr("10.78.0.5"), Port: common.Int64Ptr(upPort)},
	}
	_, err = c.BatchRegisterTargets(req)
	must(t, err)

	h := clb.NewDescribeTargetHealthRequest()
	h.LoadBalancerIds = common.StringPtrs([]string{lb})
	resp, err := c.DescribeTargetHealth(h)
	must(t, err)
	got := map[string]string{}
	for _, tg := range resp.Response.LoadBalancers[0].Listeners[0].Rules[0].Targets {
		got[fmt.Sprintf("%s:%d", *tg.IP, *tg.Port)] = fmt.Sprintf("%v/%s", *tg.HealthStatus, *tg.HealthStatusDetail)
	}
	want := map[string]string{
		fmt.Sprintf("10.77.0.5:%d", upPort):   "true/Alive",
		fmt.Sprintf("10.77.0.5:%d", downPort): "false/Dead",
		fmt.Sprintf("10.78.0.5:%d", upPort):   "true/Alive",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("health %v, want %v", got, want)
	}

	// The data plane dials the mapped address; only an address inside the
	// CIDR is mapped.
	routes := e.Routes()
	if len(routes) != 1 {
		t.Fatalf("routes %+v", routes)
	}
	var dialed []string
	for _, rt := range routes[0].Targets {
		dialed = append(dialed, fmt.Sprintf("%s:%d", rt.IP, rt.Port))
	}
	slices.Sort(dialed)
	wantDialed := []string{fmt.Sprintf("10.78.0.5:%d", upPort), fmt.Sprintf("127.77.0.5:%d", upPort), fmt.Sprintf("127.77.0.5:%d", downPort)}
	slices.Sort(wantDialed)
	if !slices.Equal(dialed, wantDialed) {
		t.Fatalf("route targets %v, want %v", dialed, wantDialed)
	}
	// The stored targets keep the VPC addresses.
	var stored []string
	for _, tg := range e.Inventory().LoadBalancers[0].Listeners[0].Targets {
		stored = append(stored, tg.IP)
	}
	if slices.Sort(stored); !slices.Equal(stored, []string{"10.77.0.5", "10.77.0.5", "10.78.0.5"}) {
		t.Fatalf("inventory targets %v", stored)
	}
}
