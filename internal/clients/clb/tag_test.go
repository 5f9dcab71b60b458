package clb

import (
	"testing"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// TestTagLoadBalancer: the client tags a load balancer through the Tag API
// (the account's uin asked once, by cam GetUserAppId), DescribeLoadBalancer
// then shows the tags, and a load balancer the account does not have is
// NotFound.
func TestTagLoadBalancer(t *testing.T) {
	e, c := start(t, emulator.Config{}, Options{})
	ctx := testCtx(t)
	lb := createLB(t, c, "tagged")
	must(t, c.TagLoadBalancer(ctx, lb, map[string]string{"owner": "pool-a", "kind": "PortPool"}))
	must(t, c.TagLoadBalancer(ctx, lb, map[string]string{"owner": "pool-b"}))
	got, err := c.DescribeLoadBalancer(ctx, lb)
	must(t, err)
	if tags := LoadBalancerTags(got); len(tags) != 2 || tags["owner"] != "pool-b" || tags["kind"] != "PortPool" {
		t.Errorf("tags %v, want owner=pool-b kind=PortPool", tags)
	}
	if n := e.CallCount("GetUserAppId"); n != 1 {
		t.Errorf("GetUserAppId called %d times, want once", n)
	}
	if err := c.TagLoadBalancer(ctx, "lb-nothere", map[string]string{"owner": "x"}); !IsNotFound(err) {
		t.Errorf("tagging an unknown load balancer: %v, want NotFound", err)
	}
	too := map[string]string{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		too[k] = "v"
	}
	if err := c.TagLoadBalancer(ctx, lb, too); !IsInvalid(err) || e.CallCount("TagResources") != 3 {
		t.Errorf("ten tags: %v after %d calls, want Invalid without a call", err, e.CallCount("TagResources"))
	}
}
