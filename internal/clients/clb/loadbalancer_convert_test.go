package clb

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

func TestLateInitLoadBalancer(t *testing.T) {
	lb := &clbsdk.LoadBalancer{
		LoadBalancerName: Ptr("web"), LoadBalancerType: Ptr("OPEN"), VpcId: Ptr("vpc-1"), SubnetId: Ptr(""),
		VipIsp: Ptr("BGP"), AddressIPVersion: Ptr("ipv4"), MasterZone: &clbsdk.ZoneInfo{Zone: Ptr("ap-guangzhou-3")},
		ProjectId: Ptr(uint64(0)), LoadBalancerPassToTarget: Ptr(false),
		NetworkAttributes: &clbsdk.InternetAccessible{InternetChargeType: Ptr("TRAFFIC_POSTPAID_BY_HOUR"), InternetMaxBandwidthOut: Ptr(int64(10))},
	}
	p := v1alpha1.LoadBalancerParameters{Name: Ptr("mine")}
	if !LateInitLoadBalancer(&p, lb) {
		t.Fatal("LateInitLoadBalancer filled nothing")
	}
	want := v1alpha1.LoadBalancerParameters{
		Name: Ptr("mine"), Type: Ptr("OPEN"), VpcID: Ptr("vpc-1"), VipIsp: Ptr("BGP"), AddressIPVersion: Ptr("IPV4"),
		MasterZoneID: Ptr("ap-guangzhou-3"), ProjectID: Ptr(int64(0)), LoadBalancerPassToTarget: Ptr(false),
		InternetAccessible: &v1alpha1.InternetAccessible{InternetChargeType: Ptr("TRAFFIC_POSTPAID_BY_HOUR"), InternetMaxBandwidthOut: Ptr(int64(10))},
	}
	if d := cmp.Diff(want, p); d != "" {
		t.Errorf("set fields are kept, empty cloud strings skipped, zero values taken: -want, +got:\n%s", d)
	}
	if LateInitLoadBalancer(&p, lb) {
		t.Error("a second pass changed something: late initialization must converge at once")
	}
	var bare v1alpha1.LoadBalancerParameters
	LateInitLoadBalancer(&bare, &clbsdk.LoadBalancer{NetworkAttributes: &clbsdk.InternetAccessible{InternetChargeType: Ptr("")}})
	if bare.InternetAccessible != nil {
		t.Errorf("an empty network answer leaves internetAccessible unset, got %+v", bare.InternetAccessible)
	}
}

// TestObserveIPv6LoadBalancer: an IPv6 load balancer's address is its
// AddressIPv6 (the cloud leaves LoadBalancerVips empty): it is the
// observation's VIP and its listeners' address, bracketed; the version
// late-initializes as CreateLoadBalancer spells it, FullChain told apart
// by IPv6Mode.
func TestObserveIPv6LoadBalancer(t *testing.T) {
	for mode, version := range map[string]string{IPv6ModeNAT64: "IPV6", IPv6ModeFullChain: "IPv6FullChain"} {
		lb := &clbsdk.LoadBalancer{
			LoadBalancerId: Ptr("lb-1"), Status: Ptr(uint64(1)), LoadBalancerVips: []*string{},
			AddressIPVersion: Ptr("ipv6"), IPv6Mode: Ptr(mode), AddressIPv6: Ptr("fdc1:b000::1"),
		}
		o := ObserveLoadBalancer(lb, v1alpha1.TaskStatus{})
		if len(o.VIPs) != 1 || o.VIPs[0] != "fdc1:b000::1" || o.AddressIPv6 != "fdc1:b000::1" {
			t.Errorf("%s: VIPs %v, AddressIPv6 %q", mode, o.VIPs, o.AddressIPv6)
		}
		var p v1alpha1.LoadBalancerParameters
		LateInitLoadBalancer(&p, lb)
		if Deref(p.AddressIPVersion) != version {
			t.Errorf("%s: addressIPVersion late-initialized to %q, want %q", mode, Deref(p.AddressIPVersion), version)
		}
		if got := IsFullChain(lb); got != (mode == IPv6ModeFullChain) {
			t.Errorf("%s: IsFullChain = %v", mode, got)
		}
		l := ObserveListener(v1alpha1.TaskStatus{}, "lb-1", &clbsdk.Listener{ListenerId: Ptr("lbl-1"), Port: Ptr(int64(30000))}, lb)
		if d := cmp.Diff([]string{"[fdc1:b000::1]:30000"}, l.Addresses); d != "" || len(l.VIPs) != 1 || l.VIPs[0] != "fdc1:b000::1" {
			t.Errorf("%s: listener VIPs %v, addresses -want +got:\n%s", mode, l.VIPs, d)
		}
	}
	v4 := &clbsdk.LoadBalancer{LoadBalancerVips: []*string{Ptr("1.1.1.1")}, AddressIPv6: Ptr("")}
	if got := LoadBalancerVIPs(v4); len(got) != 1 || got[0] != "1.1.1.1" {
		t.Errorf("IPv4 load balancer VIPs %v", got)
	}
}
