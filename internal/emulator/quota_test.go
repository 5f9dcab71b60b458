package emulator_test

import (
	"testing"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
)

func TestDescribeQuota(t *testing.T) {
	cfg := instant()
	cfg.ListenerQuota, cfg.OpenLBQuota = 7, 9
	_, _, c := env(t, cfg)
	createLB(t, c, "one")
	internal := clb.NewCreateLoadBalancerRequest()
	internal.LoadBalancerType = common.StringPtr("INTERNAL")
	internal.VpcId, internal.SubnetId = common.StringPtr("vpc-11111111"), common.StringPtr("subnet-11111111")
	internal.Number = common.Uint64Ptr(2)
	_, err := c.CreateLoadBalancer(internal)
	must(t, err)

	resp, err := c.DescribeQuota(clb.NewDescribeQuotaRequest())
	must(t, err)
	type q struct {
		limit   int64
		current *int64
	}
	got := map[string]q{}
	for _, x := range resp.Response.QuotaSet {
		got[*x.QuotaId] = q{*x.QuotaLimit, x.QuotaCurrent}
	}
	check := func(id string, limit int64, current int64, hasCurrent bool) {
		t.Helper()
		g, ok := got[id]
		if !ok {
			t.Fatalf("quota %s missing from %v", id, got)
		}
		if g.limit != limit || (g.current != nil) != hasCurrent || (hasCurrent && *g.current != current) {
			t.Fatalf("%s = limit %d current %v, want %d / %d (present %v)", id, g.limit, g.current, limit, current, hasCurrent)
		}
	}
	check("TOTAL_OPEN_CLB_QUOTA", 9, 1, true)
	check("TOTAL_INTERNAL_CLB_QUOTA", 100, 2, true)
	check("TOTAL_LISTENER_QUOTA", 7, 0, false) // per instance: QuotaCurrent is null
	check("TOTAL_LISTENER_RULE_QUOTA", 50, 0, false)
	check("TOTAL_TARGET_BIND_QUOTA", 200, 0, false)
}
