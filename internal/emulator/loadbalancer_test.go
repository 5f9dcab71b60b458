package emulator_test

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

var (
	lbIDPattern  = regexp.MustCompile(`^lb-[a-z0-9]{8}$`)
	uuidPattern  = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	dealPattern  = regexp.MustCompile(`^\d{23}$`)
	timePattern  = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`)
	listenerIDRe = regexp.MustCompile(`^lbl-[a-z0-9]{8}$`)
	locationIDRe = regexp.MustCompile(`^loc-[a-z0-9]{8}$`)
)

func describeLBs(t *testing.T, c *clb.Client, mutate func(*clb.DescribeLoadBalancersRequest)) *clb.DescribeLoadBalancersResponseParams {
	t.Helper()
	req := clb.NewDescribeLoadBalancersRequest()
	if mutate != nil {
		mutate(req)
	}
	resp, err := c.DescribeLoadBalancers(req)
	must(t, err)
	return resp.Response
}

func TestCreateLoadBalancerOpenAndInternal(t *testing.T) {
	cfg := instant()
	cfg.TaskDuration = 0
	_, _, c := env(t, cfg)

	req := clb.NewCreateLoadBalancerRequest()
	req.LoadBalancerType = common.StringPtr("OPEN")
	req.LoadBalancerName = common.StringPtr("web")
	req.VipIsp = common.StringPtr("CMCC")
	req.Tags = []*clb.TagInfo{{TagKey: common.StringPtr("team"), TagValue: common.StringPtr("games")}}
	resp, err := c.CreateLoadBalancer(req)
	must(t, err)
	r := resp.Response
	if len(r.LoadBalancerIds) != 1 || !lbIDPattern.MatchString(*r.LoadBalancerIds[0]) {
		t.Fatalf("LoadBalancerIds = %v", common.StringValues(r.LoadBalancerIds))
	}
	if !uuidPattern.MatchString(*r.RequestId) || r.DealName == nil || !dealPattern.MatchString(*r.DealName) {
		t.Fatalf("RequestId %q / DealName %v do not look real", *r.RequestId, r.DealName)
	}
	open := *r.LoadBalancerIds[0]

	req = clb.NewCreateLoadBalancerRequest()
	req.LoadBalancerType = common.StringPtr("INTERNAL")
	req.VpcId, req.SubnetId = common.StringPtr("vpc-abcd1234"), common.StringPtr("subnet-abcd1234")
	req.Number = common.Uint64Ptr(2)
	resp, err = c.CreateLoadBalancer(req)
	must(t, err)
	internal := common.StringValues(resp.Response.LoadBalancerIds)
	if len(internal) != 2 {
		t.Fatalf("Number=2 created %d load balancers", len(internal))
	}

	set := describeLBs(t, c, nil)
	if *set.TotalCount != 3 {
		t.Fatalf("TotalCount = %d, want 3", *set.TotalCount)
	}
	vips := map[string]bool{}
	for _, lb := range set.LoadBalancerSet {
		vip := *lb.LoadBalancerVips[0]
		if a, err := netip.ParseAddr(vip); err != nil || !a.IsLoopback() || vips[vip] {
			t.Fatalf("VIP %q is not a fresh loopback address", vip)
		}
		vips[vip] = true
		if lb.TargetRegionInfo == nil || *lb.TargetRegionInfo.Region != emulator.DefaultRegion || *lb.TargetRegionInfo.VpcId != *lb.VpcId {
			t.Fatalf("TargetRegionInfo = %+v", lb.TargetRegionInfo)
		}
		if !timePattern.MatchString(*lb.CreateTime) || *lb.Status != 1 || *lb.AddressIPVersion != "ipv4" {
			t.Fatalf("CreateTime %q Status %d AddressIPVersion %q", *lb.CreateTime, *lb.Status, *lb.AddressIPVersion)
		}
		switch *lb.LoadBalancerId {
		case open:
			if *lb.LoadBalancerName != "web" || *lb.VipIsp != "CMCC" || *lb.LoadBalancerType != "OPEN" ||
				len(lb.Tags) != 1 || *lb.Tags[0].TagKey != "team" || *lb.LoadBalancerDomain == "" {
				t.Fatalf("open load balancer = name %q isp %q type %q tags %d domain %q",
					*lb.LoadBalancerName, *lb.VipIsp, *lb.LoadBalancerType, len(lb.Tags), *lb.LoadBalancerDomain)
			}
		default:
			if *lb.LoadBalancerType != "INTERNAL" || *lb.VpcId != "vpc-abcd1234" || *lb.SubnetId != "subnet-abcd1234" {
				t.Fatalf("internal load balancer: type %q vpc %q subnet %q", *lb.LoadBalancerType, *lb.VpcId, *lb.SubnetId)
			}
		}
	}
}

func TestCreateLoadBalancerValidation(t *testing.T) {
	_, _, c := env(t, instant())
	cases := map[string]struct {
		mutate func(*clb.CreateLoadBalancerRequest)
		want   string
	}{
		"MissingType":      {func(r *clb.CreateLoadBalancerRequest) { r.LoadBalancerType = nil }, "MissingParameter"},
		"BadType":          {func(r *clb.CreateLoadBalancerRequest) { r.LoadBalancerType = common.StringPtr("PUBLIC") }, "InvalidParameterValue"},
		"InternalNeedsVpc": {func(r *clb.CreateLoadBalancerRequest) { r.LoadBalancerType = common.StringPtr("INTERNAL") }, "MissingParameter"},
		"OpenWithSubnet":   {func(r *clb.CreateLoadBalancerRequest) { r.SubnetId = common.StringPtr("subnet-1") }, "InvalidParameterValue"},
		"TooMany":          {func(r *clb.CreateLoadBalancerRequest) { r.Number = common.Uint64Ptr(21) }, "InvalidParameterValue.Range"},
		"BadIsp":           {func(r *clb.CreateLoadBalancerRequest) { r.VipIsp = common.StringPtr("ACME") }, "InvalidParameterValue"},
		"LongName": {func(r *clb.CreateLoadBalancerRequest) {
			r.LoadBalancerName = common.StringPtr(string(make([]byte, 81)))
		}, "InvalidParameterValue.Length"},
		"LongToken":    {func(r *clb.CreateLoadBalancerRequest) { r.ClientToken = common.StringPtr(fmt.Sprintf("%065d", 1)) }, "InvalidParameterValue.Length"},
		"MalformedVpc": {func(r *clb.CreateLoadBalancerRequest) { r.VpcId = common.StringPtr("net-1") }, "InvalidParameter.FormatError"},
		"BadIPVersion": {func(r *clb.CreateLoadBalancerRequest) { r.AddressIPVersion = common.StringPtr("IPV5") }, "InvalidParameterValue"},
		"InternalIPv6": {func(r *clb.CreateLoadBalancerRequest) {
			r.LoadBalancerType, r.AddressIPVersion = common.StringPtr("INTERNAL"), common.StringPtr("IPv6FullChain")
			r.VpcId, r.SubnetId = common.StringPtr("vpc-abcd1234"), common.StringPtr("subnet-abcd1234")
		}, "InvalidParameterValue"},
		"FullChainNeedsSubnet": {func(r *clb.CreateLoadBalancerRequest) { r.AddressIPVersion = common.StringPtr("IPv6FullChain") }, "MissingParameter"},
		"NAT64WithVip": {func(r *clb.CreateLoadBalancerRequest) {
			r.AddressIPVersion, r.Vip = common.StringPtr("IPV6"), common.StringPtr("fdc1:b000::9")
		}, "InvalidParameterValue"},
		"FullChainGlobalVip": {func(r *clb.CreateLoadBalancerRequest) {
			r.AddressIPVersion, r.SubnetId, r.Vip = common.StringPtr("IPv6FullChain"), common.StringPtr("subnet-1"), common.StringPtr("2001:db8::1")
		}, "InvalidParameterValue"},
		"IPv4WithIPv6Vip": {func(r *clb.CreateLoadBalancerRequest) { r.Vip = common.StringPtr("fdc1:b000::9") }, "InvalidParameterValue"},
		"TooManyTags":     {func(r *clb.CreateLoadBalancerRequest) { r.Tags = make([]*clb.TagInfo, 21) }, "InvalidParameterValue.Length"},
		"UnknownZone":     {func(r *clb.CreateLoadBalancerRequest) { r.MasterZoneId = common.StringPtr("ap-shanghai-2") }, "InvalidParameterValue"},
		"InternalDynamicVip": {func(r *clb.CreateLoadBalancerRequest) {
			r.LoadBalancerType, r.DynamicVip = common.StringPtr("INTERNAL"), common.BoolPtr(true)
			r.VpcId, r.SubnetId = common.StringPtr("vpc-abcd1234"), common.StringPtr("subnet-abcd1234")
		}, "InvalidParameterValue"},
		"BandwidthOutOfBand": {func(r *clb.CreateLoadBalancerRequest) {
			r.InternetAccessible = &clb.InternetAccessible{InternetMaxBandwidthOut: common.Int64Ptr(0)}
		}, "InvalidParameterValue.Range"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := clb.NewCreateLoadBalancerRequest()
			req.LoadBalancerType = common.StringPtr("OPEN")
			tc.mutate(req)
			_, err := c.CreateLoadBalancer(req)
			wantCode(t, err, tc.want)
		})
	}
	if n := describeLBs(t, c, nil).TotalCount; *n != 0 {
		t.Fatalf("%d load balancers were created by invalid requests", *n)
	}
}

func TestCreateLoadBalancerClientTokenIdempotency(t *testing.T) {
	e, _, c := env(t, instant())
	req := clb.NewCreateLoadBalancerRequest()
	req.LoadBalancerType = common.StringPtr("OPEN")
	req.ClientToken = common.StringPtr("token-1")
	first, err := c.CreateLoadBalancer(req)
	must(t, err)
	again, err := c.CreateLoadBalancer(req)
	must(t, err)
	if a, b := common.StringValues(first.Response.LoadBalancerIds), common.StringValues(again.Response.LoadBalancerIds); !slices.Equal(a, b) {
		t.Fatalf("same ClientToken gave %v then %v", a, b)
	}
	if *first.Response.DealName != *again.Response.DealName {
		t.Fatalf("DealName changed on retry")
	}
	// The retry's RequestId polls the original task.
	if s := waitTask(t, c, *again.Response.RequestId); s != 0 {
		t.Fatalf("task of retried request: status %d", s)
	}
	if n := len(e.Inventory().LoadBalancers); n != 1 {
		t.Fatalf("%d load balancers after a retried create, want 1", n)
	}

	req.LoadBalancerName = common.StringPtr("different")
	_, err = c.CreateLoadBalancer(req)
	wantCode(t, err, clb.INVALIDPARAMETER_CLIENTTOKENLIMITEXCEEDED)

	other := clb.NewCreateLoadBalancerRequest()
	other.LoadBalancerType = common.StringPtr("OPEN")
	other.ClientToken = common.StringPtr("token-2")
	resp, err := c.CreateLoadBalancer(other)
	must(t, err)
	if *resp.Response.LoadBalancerIds[0] == *first.Response.LoadBalancerIds[0] {
		t.Fatalf("a new token returned the old load balancer")
	}
}

func TestCreateLoadBalancerRetriedByTheSDK(t *testing.T) {
	// With retries enabled the SDK injects a ClientToken and resends
	// throttled creates; every call must still create exactly one instance.
	cfg := instant()
	cfg.ActionRateLimit = map[string]float64{"CreateLoadBalancer": 10}
	e, endpoint, _ := env(t, cfg)
	cpf := emulatortest.ClientProfile(endpoint)
	cpf.RateLimitExceededMaxRetries = 20
	cpf.RateLimitExceededRetryDuration = profile.ConstantDurationFunc(100 * time.Millisecond)
	c := emulatortest.NewSDKClientWithProfile(t, common.NewCredential(emulator.DefaultSecretID, emulator.DefaultSecretKey), emulator.DefaultRegion, cpf)
	for range 12 {
		req := clb.NewCreateLoadBalancerRequest()
		req.LoadBalancerType = common.StringPtr("OPEN")
		_, err := c.CreateLoadBalancer(req)
		must(t, err)
	}
	if n := len(e.Inventory().LoadBalancers); n != 12 {
		t.Fatalf("%d load balancers, want 12", n)
	}
	if e.Calls()["CreateLoadBalancer"]["RequestLimitExceeded"] == 0 {
		t.Fatalf("the rate limit never triggered; the test proves nothing")
	}
}

func TestDescribeLoadBalancersFiltersAndPaging(t *testing.T) {
	_, _, c := env(t, instant())
	var ids []string
	for i := range 5 {
		req := clb.NewCreateLoadBalancerRequest()
		req.LoadBalancerType = common.StringPtr("OPEN")
		req.LoadBalancerName = common.StringPtr(fmt.Sprintf("pool-%d", i))
		req.Tags = []*clb.TagInfo{{TagKey: common.StringPtr("env"), TagValue: common.StringPtr([]string{"prod", "dev"}[i%2])}}
		if i == 4 {
			req.Tags = append(req.Tags, &clb.TagInfo{TagKey: common.StringPtr("owner"), TagValue: common.StringPtr("me")})
		}
		resp, err := c.CreateLoadBalancer(req)
		must(t, err)
		ids = append(ids, *resp.Response.LoadBalancerIds[0])
	}
	filter := func(name string, values ...string) func(*clb.DescribeLoadBalancersRequest) {
		return func(r *clb.DescribeLoadBalancersRequest) {
			r.Filters = []*clb.Filter{{Name: common.StringPtr(name), Values: common.StringPtrs(values)}}
		}
	}
	names := func(r *clb.DescribeLoadBalancersResponseParams) []string {
		var out []string
		for _, lb := range r.LoadBalancerSet {
			out = append(out, *lb.LoadBalancerName)
		}
		slices.Sort(out)
		return out
	}
	if got := names(describeLBs(t, c, filter("tag:env", "prod"))); !slices.Equal(got, []string{"pool-0", "pool-2", "pool-4"}) {
		t.Fatalf("tag:env=prod -> %v", got)
	}
	if got := names(describeLBs(t, c, filter("tag-key", "owner"))); !slices.Equal(got, []string{"pool-4"}) {
		t.Fatalf("tag-key=owner -> %v", got)
	}
	if got := describeLBs(t, c, func(r *clb.DescribeLoadBalancersRequest) { r.LoadBalancerName = common.StringPtr("pool-3") }); *got.TotalCount != 1 {
		t.Fatalf("name filter -> %d", *got.TotalCount)
	}
	if got := describeLBs(t, c, func(r *clb.DescribeLoadBalancersRequest) { r.LoadBalancerType = common.StringPtr("INTERNAL") }); *got.TotalCount != 0 {
		t.Fatalf("INTERNAL filter -> %d", *got.TotalCount)
	}
	one := describeLBs(t, c, func(r *clb.DescribeLoadBalancersRequest) { r.LoadBalancerIds = common.StringPtrs(ids[1:2]) })
	vip := *one.LoadBalancerSet[0].LoadBalancerVips[0]
	if got := describeLBs(t, c, func(r *clb.DescribeLoadBalancersRequest) { r.LoadBalancerVips = common.StringPtrs([]string{vip}) }); *got.TotalCount != 1 || *got.LoadBalancerSet[0].LoadBalancerId != ids[1] {
		t.Fatalf("VIP filter did not find %s", ids[1])
	}
	// Unknown ids are not an error, just an empty answer.
	if got := describeLBs(t, c, func(r *clb.DescribeLoadBalancersRequest) {
		r.LoadBalancerIds = common.StringPtrs([]string{"lb-00000000"})
	}); *got.TotalCount != 0 {
		t.Fatalf("unknown id -> TotalCount %d", *got.TotalCount)
	}
	// Paging keeps TotalCount and walks every instance once, newest first.
	var seen []string
	for off := int64(0); off < 5; off += 2 {
		page := describeLBs(t, c, func(r *clb.DescribeLoadBalancersRequest) {
			r.Offset, r.Limit = common.Int64Ptr(off), common.Int64Ptr(2)
		})
		if *page.TotalCount != 5 {
			t.Fatalf("TotalCount on page %d = %d", off, *page.TotalCount)
		}
		for _, lb := range page.LoadBalancerSet {
			seen = append(seen, *lb.LoadBalancerId)
		}
	}
	want := slices.Clone(ids)
	slices.Reverse(want)
	if !slices.Equal(seen, want) {
		t.Fatalf("paging order %v, want newest first %v", seen, want)
	}

	req := clb.NewDescribeLoadBalancersRequest()
	req.LoadBalancerIds = common.StringPtrs(make([]string, 21))
	_, err := c.DescribeLoadBalancers(req)
	wantCode(t, err, "InvalidParameterValue.Length")
	req = clb.NewDescribeLoadBalancersRequest()
	req.Limit = common.Int64Ptr(101)
	_, err = c.DescribeLoadBalancers(req)
	wantCode(t, err, "InvalidParameterValue.Range")
	req = clb.NewDescribeLoadBalancersRequest()
	req.Filters = []*clb.Filter{{Name: common.StringPtr("colour"), Values: common.StringPtrs([]string{"red"})}}
	_, err = c.DescribeLoadBalancers(req)
	wantCode(t, err, "InvalidParameterValue.InvalidFilter")
}

func TestDeleteLoadBalancer(t *testing.T) {
	e, _, c := env(t, instant())
	lb := createLB(t, c, "gone")
	createListeners(t, c, lb, "TCP", 80)
	vip := e.Inventory().LoadBalancers[0].VIP

	req := clb.NewDeleteLoadBalancerRequest()
	req.LoadBalancerIds = common.StringPtrs([]string{lb, "lb-missing1"})
	_, err := c.DeleteLoadBalancer(req)
	wantCode(t, err, clb.INVALIDPARAMETER_LBIDNOTFOUND)
	if len(e.Inventory().LoadBalancers) != 1 {
		t.Fatalf("a failed delete removed something")
	}

	req.LoadBalancerIds = common.StringPtrs([]string{lb})
	resp, err := c.DeleteLoadBalancer(req)
	must(t, err)
	if s := waitTask(t, c, *resp.Response.RequestId); s != 0 {
		t.Fatalf("delete task status %d", s)
	}
	if inv := e.Inventory(); len(inv.LoadBalancers) != 0 {
		t.Fatalf("inventory after delete: %+v", inv)
	}
	dl := clb.NewDescribeListenersRequest()
	dl.LoadBalancerId = &lb
	_, err = c.DescribeListeners(dl)
	wantCode(t, err, clb.INVALIDPARAMETER_LBIDNOTFOUND)
	_, err = c.DeleteLoadBalancer(req)
	wantCode(t, err, clb.INVALIDPARAMETER_LBIDNOTFOUND)

	// The VIP went back to the pool (it is not reused at once, but it is free).
	for _, l := range e.Inventory().LoadBalancers {
		if l.VIP == vip {
			t.Fatalf("VIP %s still held", vip)
		}
	}
}

func TestDeleteLoadBalancerSafetyChecks(t *testing.T) {
	_, _, c := env(t, instant())
	lb := createLB(t, c, "busy-backends")
	lis := createListeners(t, c, lb, "TCP", 80)[0]
	bt := clb.NewBatchRegisterTargetsRequest()
	bt.LoadBalancerId = &lb
	for i := range 20 {
		bt.Targets = append(bt.Targets, &clb.BatchTarget{ListenerId: &lis, Port: common.Int64Ptr(8000), EniIp: common.StringPtr(fmt.Sprintf("10.0.0.%d", i+1))})
	}
	_, err := c.BatchRegisterTargets(bt)
	must(t, err)

	req := clb.NewDeleteLoadBalancerRequest()
	req.LoadBalancerIds = common.StringPtrs([]string{lb})
	_, err = c.DeleteLoadBalancer(req)
	wantCode(t, err, clb.FAILEDOPERATION_TARGETNUMCHECKRISK)
	req.ForceDelete = common.BoolPtr(true)
	_, err = c.DeleteLoadBalancer(req)
	must(t, err)

	protected := createLB(t, c, "protected")
	m := clb.NewModifyLoadBalancerAttributesRequest()
	m.LoadBalancerId, m.DeleteProtect = &protected, common.BoolPtr(true)
	resp, err := c.ModifyLoadBalancerAttributes(m)
	must(t, err)
	waitTask(t, c, *resp.Response.RequestId)
	req.LoadBalancerIds = common.StringPtrs([]string{protected})
	_, err = c.DeleteLoadBalancer(req)
	wantCode(t, err, clb.FAILEDOPERATION)
}

func TestModifyLoadBalancerAttributes(t *testing.T) {
	_, _, c := env(t, instant())
	a := createLB(t, c, "alpha")
	createLB(t, c, "beta")
	req := clb.NewModifyLoadBalancerAttributesRequest()
	req.LoadBalancerId, req.LoadBalancerName = &a, common.StringPtr("beta")
	_, err := c.ModifyLoadBalancerAttributes(req)
	wantCode(t, err, clb.INVALIDPARAMETERVALUE_DUPLICATE)

	req.LoadBalancerName = common.StringPtr("gamma")
	req.InternetChargeInfo = &clb.InternetAccessible{InternetMaxBandwidthOut: common.Int64Ptr(100)}
	resp, err := c.ModifyLoadBalancerAttributes(req)
	must(t, err)
	waitTask(t, c, *resp.Response.RequestId)
	got := describeLBs(t, c, func(r *clb.DescribeLoadBalancersRequest) { r.LoadBalancerIds = common.StringPtrs([]string{a}) })
	lb := got.LoadBalancerSet[0]
	if *lb.LoadBalancerName != "gamma" || *lb.NetworkAttributes.InternetMaxBandwidthOut != 100 {
		t.Fatalf("after modify: name %q bandwidth %d", *lb.LoadBalancerName, *lb.NetworkAttributes.InternetMaxBandwidthOut)
	}
	req.LoadBalancerId = common.StringPtr("lb-nothere")
	_, err = c.ModifyLoadBalancerAttributes(req)
	wantCode(t, err, clb.INVALIDPARAMETER_LBIDNOTFOUND)
}

func TestLoadBalancerQuotaAndRegions(t *testing.T) {
	cfg := instant()
	cfg.OpenLBQuota = 2
	_, endpoint, c := env(t, cfg)
	createLB(t, c, "one")
	req := clb.NewCreateLoadBalancerRequest()
	req.LoadBalancerType = common.StringPtr("OPEN")
	req.Number = common.Uint64Ptr(2)
	_, err := c.CreateLoadBalancer(req)
	wantCode(t, err, clb.LIMITEXCEEDED)
	createLB(t, c, "two")

	// Quotas and inventories are per region.
	sh := emulatortest.NewSDKClient(t, endpoint, emulator.DefaultSecretID, emulator.DefaultSecretKey, "ap-shanghai")
	createLB(t, sh, "elsewhere")
	if n := *describeLBs(t, sh, nil).TotalCount; n != 1 {
		t.Fatalf("ap-shanghai sees %d load balancers, want 1", n)
	}
	gz := describeLBs(t, c, nil)
	if *gz.TotalCount != 2 {
		t.Fatalf("ap-guangzhou sees %d load balancers, want 2", *gz.TotalCount)
	}
	dl := clb.NewDescribeListenersRequest()
	dl.LoadBalancerId = gz.LoadBalancerSet[0].LoadBalancerId
	_, err = sh.DescribeListeners(dl)
	wantCode(t, err, clb.INVALIDPARAMETER_LBIDNOTFOUND)
}

func TestDeleteLoadBalancerFrequencyCheck(t *testing.T) {
	_, _, c := env(t, instant())
	create := clb.NewCreateLoadBalancerRequest()
	create.LoadBalancerType, create.Number = common.StringPtr("OPEN"), common.Uint64Ptr(20)
	var ids []string
	for range 2 {
		resp, err := c.CreateLoadBalancer(create)
		must(t, err)
		ids = append(ids, common.StringValues(resp.Response.LoadBalancerIds)...)
	}
	del := clb.NewDeleteLoadBalancerRequest()
	del.LoadBalancerIds = common.StringPtrs(ids[:20])
	_, err := c.DeleteLoadBalancer(del)
	must(t, err)
	del.LoadBalancerIds = common.StringPtrs(ids[20:29]) // 29 deletions in 5 minutes
	_, err = c.DeleteLoadBalancer(del)
	must(t, err)
	del.LoadBalancerIds = common.StringPtrs(ids[29:30])
	_, err = c.DeleteLoadBalancer(del)
	wantCode(t, err, clb.FAILEDOPERATION_FREQUENCYCHECKRISK)
	del.ForceDelete = common.BoolPtr(true)
	_, err = c.DeleteLoadBalancer(del)
	must(t, err)
}

// TestCreateLoadBalancerDynamicVip: a domain-based load balancer has its
// domain in DescribeLoadBalancers' Domain as well as LoadBalancerDomain;
// any other has an empty Domain.
func TestCreateLoadBalancerDynamicVip(t *testing.T) {
	_, _, c := env(t, instant())
	ids := map[bool]string{}
	for _, dynamic := range []bool{true, false} {
		req := clb.NewCreateLoadBalancerRequest()
		req.LoadBalancerType = common.StringPtr("OPEN")
		if dynamic {
			req.DynamicVip = common.BoolPtr(true)
		}
		resp, err := c.CreateLoadBalancer(req)
		must(t, err)
		ids[dynamic] = *resp.Response.LoadBalancerIds[0]
	}
	for dynamic, id := range ids {
		set := describeLBs(t, c, func(r *clb.DescribeLoadBalancersRequest) { r.LoadBalancerIds = common.StringPtrs([]string{id}) })
		lb := set.LoadBalancerSet[0]
		want := ""
		if dynamic {
			want = *lb.LoadBalancerDomain
		}
		if *lb.LoadBalancerDomain == "" || *lb.Domain != want {
			t.Errorf("DynamicVip %v: Domain %q, LoadBalancerDomain %q; want Domain %q", dynamic, *lb.Domain, *lb.LoadBalancerDomain, want)
		}
	}
}
