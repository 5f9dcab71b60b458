package emulator_test

import (
	"encoding/json"
	"strings"
	"testing"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

func createIPv6LB(t *testing.T, c *clb.Client, version string, mutate func(*clb.CreateLoadBalancerRequest)) string {
	t.Helper()
	req := clb.NewCreateLoadBalancerRequest()
	req.LoadBalancerType, req.AddressIPVersion = common.StringPtr("OPEN"), common.StringPtr(version)
	if mutate != nil {
		mutate(req)
	}
	resp, err := c.CreateLoadBalancer(req)
	must(t, err)
	return *resp.Response.LoadBalancerIds[0]
}

// TestIPv6LoadBalancers: IPV6 (NAT64, any case) and IPv6FullChain load
// balancers are created and described as the real API answers them:
// AddressIPVersion "ipv6", IPv6Mode telling the two apart, the address in
// AddressIPv6 and LoadBalancerVips empty. Addresses come from the IPv6
// pool in order; an IPv4 load balancer has neither field.
func TestIPv6LoadBalancers(t *testing.T) {
	cfg := instant()
	cfg.VIP6Base = "fdc1:b000:7::10"
	_, _, c := env(t, cfg)
	nat := createIPv6LB(t, c, "ipv6", nil)
	full := createIPv6LB(t, c, "IPv6FullChain", func(r *clb.CreateLoadBalancerRequest) { r.SubnetId = common.StringPtr("subnet-v6") })
	fixed := createIPv6LB(t, c, "IPV6FULLCHAIN", func(r *clb.CreateLoadBalancerRequest) {
		r.SubnetId, r.Vip = common.StringPtr("subnet-v6"), common.StringPtr("fdc1:b000:7:0:0:0:0:99")
	})
	v4 := createLB(t, c, "v4")

	want := map[string]struct{ mode, addr string }{
		nat:   {"IPv6Nat64", "fdc1:b000:7::10"},
		full:  {"IPv6FullChain", "fdc1:b000:7::11"},
		fixed: {"IPv6FullChain", "fdc1:b000:7::99"},
	}
	for _, lb := range describeLBs(t, c, nil).LoadBalancerSet {
		b, _ := json.Marshal(lb)
		got := string(b)
		if *lb.LoadBalancerId == v4 {
			if *lb.AddressIPVersion != "ipv4" || lb.AddressIPv6 != nil || lb.IPv6Mode != nil || len(lb.LoadBalancerVips) != 1 {
				t.Errorf("IPv4 load balancer: %s", got)
			}
			continue
		}
		w := want[*lb.LoadBalancerId]
		for _, field := range []string{`"AddressIPVersion":"ipv6"`, `"IPv6Mode":"` + w.mode + `"`, `"AddressIPv6":"` + w.addr + `"`} {
			if !strings.Contains(got, field) {
				t.Errorf("%s: no %s in %s", *lb.LoadBalancerId, field, got)
			}
		}
		if len(lb.LoadBalancerVips) != 0 {
			t.Errorf("%s: LoadBalancerVips %v, want none", *lb.LoadBalancerId, common.StringValues(lb.LoadBalancerVips))
		}
	}
	if n := len(describeLBs(t, c, nil).LoadBalancerSet); n != 4 {
		t.Fatalf("%d load balancers, want 4", n)
	}
}

// TestIPv6TargetFamilies: an IPv6 (NAT64) load balancer takes IPv4
// targets and refuses IPv6 ones; an IPv6FullChain one takes IPv6 targets
// and refuses IPv4 ones and InstanceIds (a CVM's primary IPv4), in
// RegisterTargets and per listener in BatchRegisterTargets. The data
// plane's routes go from the IPv6 VIP to the target of each family.
func TestIPv6TargetFamilies(t *testing.T) {
	plane := &fakePlane{}
	cfg := instant()
	cfg.DataPlane = plane
	_, _, c := env(t, cfg)
	nat := createIPv6LB(t, c, "IPV6", nil)
	full := createIPv6LB(t, c, "IPv6FullChain", func(r *clb.CreateLoadBalancerRequest) { r.SubnetId = common.StringPtr("subnet-v6") })
	natL := createListeners(t, c, nat, "TCP", 7000)[0]
	fullL := createListeners(t, c, full, "TCP", 7000)[0]

	register := func(lb, l string, tg *clb.Target) error {
		req := clb.NewRegisterTargetsRequest()
		req.LoadBalancerId, req.ListenerId, req.Targets = &lb, &l, []*clb.Target{tg}
		_, err := c.RegisterTargets(req)
		return err
	}
	eni := func(ip string) *clb.Target {
		return &clb.Target{EniIp: common.StringPtr(ip), Port: common.Int64Ptr(80)}
	}
	wantCode(t, register(nat, natL, eni("fd00:10::5")), "InvalidParameterValue")
	wantCode(t, register(full, fullL, eni("10.0.0.5")), "InvalidParameterValue")
	msg := wantCode(t, register(full, fullL, &clb.Target{InstanceId: common.StringPtr("ins-abcd1234"), Port: common.Int64Ptr(80)}), "InvalidParameterValue")
	if !strings.Contains(msg, "takes IPv6 targets") {
		t.Errorf("InstanceId refusal says %q", msg)
	}
	batch := clb.NewBatchRegisterTargetsRequest()
	batch.LoadBalancerId = &full
	batch.Targets = []*clb.BatchTarget{{ListenerId: &fullL, EniIp: common.StringPtr("10.0.0.6"), Port: common.Int64Ptr(80)}}
	resp, err := c.BatchRegisterTargets(batch)
	must(t, err)
	if got := common.StringValues(resp.Response.FailListenerIdSet); len(got) != 1 || got[0] != fullL {
		t.Errorf("BatchRegisterTargets of an IPv4 target on IPv6FullChain: failed listeners %v", got)
	}
	must(t, register(nat, natL, eni("10.0.0.5")))
	must(t, register(full, fullL, eni("fd00:10:0:0::5")))

	var got []string
	for _, r := range plane.last() {
		got = append(got, describe([]emulator.Route{r})...)
	}
	joined := strings.Join(got, "\n")
	for _, want := range []string{"fdc1:b000::1 TCP 7000 -> 10.0.0.5:80/10", "fdc1:b000::2 TCP 7000 -> fd00:10::5:80/10"} {
		if !strings.Contains(joined, want) {
			t.Errorf("routes\n%s\nlack %q", joined, want)
		}
	}
}
