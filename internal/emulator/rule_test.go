package emulator_test

import (
	"testing"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

func createRules(t *testing.T, c *clb.Client, lb, listener string, rules ...*clb.RuleInput) []string {
	t.Helper()
	req := clb.NewCreateRuleRequest()
	req.LoadBalancerId, req.ListenerId, req.Rules = &lb, &listener, rules
	resp, err := c.CreateRule(req)
	must(t, err)
	waitTask(t, c, *resp.Response.RequestId)
	return common.StringValues(resp.Response.LocationIds)
}

func rule(domain, url string) *clb.RuleInput {
	return &clb.RuleInput{Domain: &domain, Url: &url}
}

func TestRulesLifecycle(t *testing.T) {
	cfg := instant()
	cfg.RuleQuota = 3
	_, _, c := env(t, cfg)
	lb := createLB(t, c, "web")
	http := createListeners(t, c, lb, "HTTP", 80)[0]
	tcp := createListeners(t, c, lb, "TCP", 81)[0]

	withHC := rule("b.example.com", "/api")
	withHC.Scheduler = common.StringPtr("IP_HASH")
	withHC.HealthCheck = &clb.HealthCheck{HttpCheckPath: common.StringPtr("/healthz")}
	ids := createRules(t, c, lb, http, rule("a.example.com", "/"), withHC)
	if len(ids) != 2 || !locationIDRe.MatchString(ids[0]) || ids[0] == ids[1] {
		t.Fatalf("LocationIds = %v", ids)
	}

	// Rules come back inside DescribeListeners.
	l := describeListener(t, c, lb, http)
	if len(l.Rules) != 2 {
		t.Fatalf("listener has %d rules, want 2", len(l.Rules))
	}
	r := l.Rules[1]
	if *r.LocationId != ids[1] || *r.Domain != "b.example.com" || *r.Url != "/api" || *r.Scheduler != "IP_HASH" ||
		*r.ListenerId != http || *r.HealthCheck.HttpCheckPath != "/healthz" || *r.HealthCheck.CheckType != "HTTP" {
		t.Fatalf("rule = %+v", r)
	}
	if !*l.Rules[0].DefaultServer || *l.Rules[1].DefaultServer {
		t.Fatalf("the first domain should be the default server")
	}

	req := clb.NewCreateRuleRequest()
	req.LoadBalancerId, req.ListenerId = &lb, &tcp
	req.Rules = []*clb.RuleInput{rule("x.example.com", "/")}
	_, err := c.CreateRule(req)
	if msg := wantCode(t, err, clb.INVALIDPARAMETERVALUE); msg != "This interface only support HTTP/HTTPS listener." {
		t.Fatalf("message %q", msg)
	}
	req.ListenerId = &http
	req.Rules = []*clb.RuleInput{rule("a.example.com", "/")}
	_, err = c.CreateRule(req)
	wantCode(t, err, clb.INVALIDPARAMETERVALUE_DUPLICATE)
	req.Rules = []*clb.RuleInput{{Domain: common.StringPtr("c.example.com")}}
	_, err = c.CreateRule(req)
	wantCode(t, err, clb.MISSINGPARAMETER)
	req.Rules = []*clb.RuleInput{rule("c.example.com", "/1"), rule("c.example.com", "/2")}
	_, err = c.CreateRule(req)
	wantCode(t, err, clb.LIMITEXCEEDED)

	mod := clb.NewModifyRuleRequest()
	mod.LoadBalancerId, mod.ListenerId, mod.LocationId = &lb, &http, &ids[0]
	mod.Url = common.StringPtr("/v2")
	mod.SessionExpireTime = common.Int64Ptr(120)
	resp, err := c.ModifyRule(mod)
	must(t, err)
	waitTask(t, c, *resp.Response.RequestId)
	if r := describeListener(t, c, lb, http).Rules[0]; *r.Url != "/v2" || *r.SessionExpireTime != 120 {
		t.Fatalf("after ModifyRule: url %q session %d", *r.Url, *r.SessionExpireTime)
	}
	mod.LocationId = common.StringPtr("loc-nothere")
	_, err = c.ModifyRule(mod)
	wantCode(t, err, clb.INVALIDPARAMETER_LOCATIONNOTFOUND)

	del := clb.NewDeleteRuleRequest()
	del.LoadBalancerId, del.ListenerId = &lb, &http
	del.LocationIds = common.StringPtrs([]string{"loc-nothere"})
	_, err = c.DeleteRule(del)
	wantCode(t, err, clb.INVALIDPARAMETER_LOCATIONNOTFOUND)
	del.LocationIds = nil
	del.Domain, del.Url = common.StringPtr("a.example.com"), common.StringPtr("/v2")
	dresp, err := c.DeleteRule(del)
	must(t, err)
	waitTask(t, c, *dresp.Response.RequestId)
	l = describeListener(t, c, lb, http)
	if len(l.Rules) != 1 || *l.Rules[0].LocationId != ids[1] || !*l.Rules[0].DefaultServer {
		t.Fatalf("after DeleteRule: %d rules", len(l.Rules))
	}
}

func TestHTTPSRulesWithSNI(t *testing.T) {
	_, _, c := env(t, instant())
	lb := createLB(t, c, "sni")
	req := newCreateListener(lb, "HTTPS", 443)
	req.SniSwitch = common.Int64Ptr(1)
	resp, err := c.CreateListener(req)
	must(t, err)
	l := *resp.Response.ListenerIds[0]

	cr := clb.NewCreateRuleRequest()
	cr.LoadBalancerId, cr.ListenerId = &lb, &l
	cr.Rules = []*clb.RuleInput{rule("a.example.com", "/")}
	_, err = c.CreateRule(cr)
	wantCode(t, err, clb.MISSINGPARAMETER) // SNI rules need their own certificate

	withCert := rule("a.example.com", "/")
	withCert.Certificate = &clb.CertificateInput{CertId: common.StringPtr("certAAAA")}
	createRules(t, c, lb, l, withCert)
	if got := describeListener(t, c, lb, l).Rules[0].Certificate; got == nil || *got.CertId != "certAAAA" {
		t.Fatalf("rule certificate = %+v", got)
	}
}

func TestRuleTargets(t *testing.T) {
	_, endpoint, c := env(t, instant())
	lb := createLB(t, c, "l7")
	http := createListeners(t, c, lb, "HTTP", 80)[0]
	loc := createRules(t, c, lb, http, rule("a.example.com", "/"))[0]

	reg := clb.NewRegisterTargetsRequest()
	reg.LoadBalancerId, reg.ListenerId = &lb, &http
	reg.Targets = []*clb.Target{{EniIp: common.StringPtr("10.1.0.1"), Port: common.Int64Ptr(8080)}}
	_, err := c.RegisterTargets(reg)
	wantCode(t, err, clb.MISSINGPARAMETER) // an L7 listener needs the rule
	reg.Domain, reg.Url = common.StringPtr("a.example.com"), common.StringPtr("/")
	resp, err := c.RegisterTargets(reg)
	must(t, err)
	waitTask(t, c, *resp.Response.RequestId)

	dt := clb.NewDescribeTargetsRequest()
	dt.LoadBalancerId = &lb
	dt.Filters = []*clb.Filter{{Name: common.StringPtr("location-id"), Values: common.StringPtrs([]string{loc})}}
	out, err := newClient(t, endpoint, emulator.DefaultSecretID, emulator.DefaultRegion).DescribeTargets(dt)
	must(t, err)
	ls := out.Response.Listeners
	if len(ls) != 1 || len(ls[0].Rules) != 1 || len(ls[0].Rules[0].Targets) != 1 ||
		*ls[0].Rules[0].Targets[0].PrivateIpAddresses[0] != "10.1.0.1" || *ls[0].Rules[0].Targets[0].Weight != 10 {
		t.Fatalf("DescribeTargets by location = %+v", ls)
	}
}
