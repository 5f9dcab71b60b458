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
