package emulator_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	tchttp "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/http"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

// sendCommon sends action of service through the SDK's common client, as
// the provider does, and returns the answer's Response.
func sendCommon(t *testing.T, endpoint, region, service, version, action string, params map[string]any) (map[string]any, error) {
	t.Helper()
	c := common.NewCommonClient(common.NewCredential(emulator.DefaultSecretID, emulator.DefaultSecretKey), region, emulatortest.ClientProfile(endpoint))
	req := tchttp.NewCommonRequest(service, version, action)
	if err := req.SetActionParameters(params); err != nil {
		t.Fatal(err)
	}
	resp := tchttp.NewCommonResponse()
	if err := c.Send(req, resp); err != nil {
		return nil, err
	}
	var out struct{ Response map[string]any }
	if err := json.Unmarshal(resp.GetBody(), &out); err != nil {
		t.Fatal(err)
	}
	return out.Response, nil
}

func tagResources(t *testing.T, endpoint string, resources []string, tags map[string]string) error {
	t.Helper()
	var list []map[string]string
	for k, v := range tags {
		list = append(list, map[string]string{"TagKey": k, "TagValue": v})
	}
	_, err := sendCommon(t, endpoint, emulator.DefaultRegion, "tag", "2018-08-13", "TagResources", map[string]any{"ResourceList": resources, "Tags": list})
	return err
}

func lbTags(t *testing.T, c *clb.Client, id string) map[string]string {
	t.Helper()
	req := clb.NewDescribeLoadBalancersRequest()
	req.LoadBalancerIds = common.StringPtrs([]string{id})
	resp, err := c.DescribeLoadBalancers(req)
	must(t, err)
	out := map[string]string{}
	for _, tg := range resp.Response.LoadBalancerSet[0].Tags {
		out[*tg.TagKey] = *tg.TagValue
	}
	return out
}

func clbResource(region, id string) string {
	return fmt.Sprintf("qcs::clb:%s:uin/%s:clb/%s", region, emulator.EmulatedUIN, id)
}

// TestTagResources: TagResources binds tags to load balancers named by
// their CAM resource, replacing a key's value, and DescribeLoadBalancers
// then shows them and filters by them; each malformed or over-the-bound
// request is refused with the Tag API's code and writes nothing. cam
// GetUserAppId answers the account's uin.
func TestTagResources(t *testing.T) {
	_, endpoint, c := env(t, instant())
	lb := createLB(t, c, "tagged")
	other := createLB(t, c, "other")

	resp, err := sendCommon(t, endpoint, "", "cam", "2019-01-16", "GetUserAppId", map[string]any{})
	must(t, err)
	if resp["OwnerUin"] != emulator.EmulatedUIN {
		t.Errorf("GetUserAppId answered %v, want OwnerUin %s", resp, emulator.EmulatedUIN)
	}

	must(t, tagResources(t, endpoint, []string{clbResource(emulator.DefaultRegion, lb)}, map[string]string{"owner": "a", "team": "x"}))
	must(t, tagResources(t, endpoint, []string{clbResource(emulator.DefaultRegion, lb)}, map[string]string{"owner": "b"}))
	if got := lbTags(t, c, lb); len(got) != 2 || got["owner"] != "b" || got["team"] != "x" {
		t.Errorf("tags %v, want owner=b team=x", got)
	}
	for _, f := range []*clb.Filter{
		{Name: common.StringPtr("tag:owner"), Values: common.StringPtrs([]string{"b"})},
		{Name: common.StringPtr("tag-key"), Values: common.StringPtrs([]string{"team"})},
	} {
		req := clb.NewDescribeLoadBalancersRequest()
		req.Filters = []*clb.Filter{f}
		r, err := c.DescribeLoadBalancers(req)
		must(t, err)
		if len(r.Response.LoadBalancerSet) != 1 || *r.Response.LoadBalancerSet[0].LoadBalancerId != lb {
			t.Errorf("filter %s found %d load balancers, want %s alone", *f.Name, len(r.Response.LoadBalancerSet), lb)
		}
	}

	ten := make([]string, 10)
	for i := range ten {
		ten[i] = clbResource(emulator.DefaultRegion, other)
	}
	many := map[string]string{}
	for i := range 10 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	res := func(s string) []string { return []string{s} }
	ok := res(clbResource(emulator.DefaultRegion, other))
	for _, tc := range []struct {
		name      string
		resources []string
		tags      map[string]string
		code      string
	}{
		{"no resource", nil, map[string]string{"a": "b"}, "MissingParameter"},
		{"ten resources", ten, map[string]string{"a": "b"}, "LimitExceeded.ResourceNumPerRequest"},
		{"no tag", ok, nil, "MissingParameter"},
		{"ten tags", ok, many, "LimitExceeded.TagNumPerRequest"},
		{"five segments", res("qcs::clb:" + emulator.DefaultRegion + ":uin/" + emulator.EmulatedUIN), map[string]string{"a": "b"}, "InvalidParameterValue.ResourceDescriptionError"},
		{"another service", res("qcs::cvm:" + emulator.DefaultRegion + ":uin/" + emulator.EmulatedUIN + ":instance/ins-1"), map[string]string{"a": "b"}, "InvalidParameterValue.ServiceTypeInvalid"},
		{"unknown region", res(clbResource("ap-nowhere", other)), map[string]string{"a": "b"}, "InvalidParameterValue.RegionInvalid"},
		{"another account", res(strings.Replace(clbResource(emulator.DefaultRegion, other), emulator.EmulatedUIN, "42", 1)), map[string]string{"a": "b"}, "InvalidParameterValue.UinInvalid"},
		{"another prefix", res(strings.Replace(clbResource(emulator.DefaultRegion, other), ":clb/", ":listener/", 1)), map[string]string{"a": "b"}, "InvalidParameterValue.ResourcePrefixInvalid"},
		{"unknown load balancer", res(clbResource(emulator.DefaultRegion, "lb-nothere")), map[string]string{"a": "b"}, "InvalidParameterValue.ResourceIdInvalid"},
		{"one unknown among known", append(res(clbResource(emulator.DefaultRegion, "lb-nothere")), ok...), map[string]string{"a": "b"}, "InvalidParameterValue.ResourceIdInvalid"},
		{"long key", ok, map[string]string{strings.Repeat("k", 128): "v"}, "InvalidParameterValue.TagKeyLengthExceeded"},
		{"long value", ok, map[string]string{"k": strings.Repeat("v", 256)}, "InvalidParameterValue.TagValueLengthExceeded"},
		{"reserved key", ok, map[string]string{"qcloud:x": "v"}, "InvalidParameterValue.ReservedTagKey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, tagResources(t, endpoint, tc.resources, tc.tags), tc.code)
			if got := lbTags(t, c, other); len(got) != 0 {
				t.Errorf("the refused call tagged %s: %v", other, got)
			}
		})
	}

	// A resource carries at most 50 tags.
	for i := range 5 {
		tags := map[string]string{}
		for j := range 9 {
			tags[fmt.Sprintf("k%d-%d", i, j)] = "v"
		}
		must(t, tagResources(t, endpoint, ok, tags))
	}
	wantCode(t, tagResources(t, endpoint, ok, map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6"}), "LimitExceeded.ResourceAttachedTags")
	if got := lbTags(t, c, other); len(got) != 45 {
		t.Errorf("%d tags after a refused call, want the 45 bound before", len(got))
	}
	must(t, tagResources(t, endpoint, ok, map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}))
}

// TestTagResourcesCAMPolicy: a key whose policy allows clb calls only may
// not tag; one allowed tag:TagResources on the load balancer's resource
// may.
func TestTagResourcesCAMPolicy(t *testing.T) {
	e, endpoint, c := env(t, instant())
	lb := createLB(t, c, "tagged")
	e.SetPolicy(emulator.DefaultSecretID, []string{"clb:*"})
	wantCode(t, tagResources(t, endpoint, []string{clbResource(emulator.DefaultRegion, lb)}, map[string]string{"a": "b"}), "UnauthorizedOperation")
	p, err := emulator.ParseCAMPolicy([]byte(`{"version":"2.0","statement":[{"effect":"allow","action":["tag:TagResources"],"resource":["qcs::clb:` +
		emulator.DefaultRegion + `:uin/` + emulator.EmulatedUIN + `:clb/` + lb + `"]}]}`))
	must(t, err)
	e.SetCAMPolicy(emulator.DefaultSecretID, p)
	must(t, tagResources(t, endpoint, []string{clbResource(emulator.DefaultRegion, lb)}, map[string]string{"a": "b"}))
	other := "lb-other"
	wantCode(t, tagResources(t, endpoint, []string{clbResource(emulator.DefaultRegion, other)}, map[string]string{"a": "b"}), "UnauthorizedOperation")
}
