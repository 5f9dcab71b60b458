package emulator_test

import (
	"strings"
	"testing"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

func TestPermissionPolicy(t *testing.T) {
	cfg := instant()
	cfg.Credentials = []emulator.Credential{
		{SecretID: emulator.DefaultSecretID, SecretKey: emulator.DefaultSecretKey},
		{SecretID: "AKIDreader", SecretKey: "AKIDreader-key"},
	}
	e, endpoint, admin := env(t, cfg)
	reader := newClient(t, endpoint, "AKIDreader", emulator.DefaultRegion)
	e.SetPolicy("AKIDreader", []string{"clb:Describe*", "name/clb:DescribeTaskStatus"})

	lb := createLB(t, admin, "shared") // the admin key has no policy: everything is allowed
	_, err := reader.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest())
	must(t, err)
	_, err = reader.CreateListener(newCreateListener(lb, "TCP", 80))
	wantCode(t, err, clb.UNAUTHORIZEDOPERATION)
	if e.Inventory().Listeners() != 0 {
		t.Fatalf("a denied call changed the cloud")
	}

	e.SetPolicy("AKIDreader", []string{"CreateListener"}) // bare action names work too
	_, err = reader.CreateListener(newCreateListener(lb, "TCP", 80))
	must(t, err)
	wantCode(t, describeQuota(reader), clb.UNAUTHORIZEDOPERATION)

	e.SetPolicy("AKIDreader", []string{}) // empty: deny all
	_, err = reader.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest())
	wantCode(t, err, clb.UNAUTHORIZEDOPERATION)
	e.SetPolicy("AKIDreader", nil) // nil: no policy
	must(t, describeQuota(reader))
}

// TestCAMPolicyDocument loads a CAM document: a deny wins over an allow,
// action wildcards match, and a resource names one load balancer, so a
// call on another one, or one that names none, is refused.
func TestCAMPolicyDocument(t *testing.T) {
	cfg := instant()
	cfg.Credentials = []emulator.Credential{
		{SecretID: emulator.DefaultSecretID, SecretKey: emulator.DefaultSecretKey},
		{SecretID: "AKIDscoped", SecretKey: "AKIDscoped-key"},
	}
	e, endpoint, admin := env(t, cfg)
	scoped := newClient(t, endpoint, "AKIDscoped", emulator.DefaultRegion)
	mine, other := createLB(t, admin, "mine"), createLB(t, admin, "other")

	p, err := emulator.ParseCAMPolicy([]byte(`{"version": "2.0", "statement": [
		{"effect": "allow", "action": ["clb:Describe*", "name/clb:CreateListener"], "resource": "*"},
		{"effect": "allow", "action": "clb:DeleteListener",
		 "resource": ["qcs::clb:` + emulator.DefaultRegion + `:uin/` + emulator.EmulatedUIN + `:clb/` + mine + `"]},
		{"effect": "deny", "action": "clb:DescribeQuota", "resource": "*"}]}`))
	must(t, err)
	e.SetCAMPolicy("AKIDscoped", p)

	ids, err := scoped.CreateListener(newCreateListener(mine, "TCP", 80, 81))
	must(t, err)
	waitTask(t, admin, *ids.Response.RequestId)
	otherIDs, err := admin.CreateListener(newCreateListener(other, "TCP", 80))
	must(t, err)
	waitTask(t, admin, *otherIDs.Response.RequestId)

	wantCode(t, describeQuota(scoped), clb.UNAUTHORIZEDOPERATION) // Describe* allows it, the deny wins
	_, err = scoped.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest())
	must(t, err)

	del := func(lb, id string) error {
		req := clb.NewDeleteListenerRequest()
		req.LoadBalancerId, req.ListenerId = &lb, &id
		_, err := scoped.DeleteListener(req)
		return err
	}
	msg := wantCode(t, del(other, *otherIDs.Response.ListenerIds[0]), clb.UNAUTHORIZEDOPERATION)
	if !strings.Contains(msg, "clb/"+other) {
		t.Errorf("the refusal does not name the load balancer: %s", msg)
	}
	must(t, del(mine, *ids.Response.ListenerIds[0]))
	_, err = scoped.CreateRule(clb.NewCreateRuleRequest())
	wantCode(t, err, clb.UNAUTHORIZEDOPERATION) // no statement names the action

	// A resource pattern for every load balancer of the account.
	p, err = emulator.ParseCAMPolicy([]byte(`{"version":"2.0","statement":[{"effect":"allow","action":"clb:DeleteLoadBalancer","resource":"qcs::clb::uin/*:clb/*"}]}`))
	must(t, err)
	e.SetCAMPolicy("AKIDscoped", p)
	req := clb.NewDeleteLoadBalancerRequest()
	req.LoadBalancerIds = []*string{&other}
	_, err = scoped.DeleteLoadBalancer(req)
	must(t, err)

	if got := e.CallsBy("AKIDscoped")["DescribeQuota"]["UnauthorizedOperation"]; got != 1 {
		t.Errorf("CallsBy counts %d refused DescribeQuota calls of the key, want 1", got)
	}
	if got := e.CallsBy(emulator.DefaultSecretID)["DescribeQuota"]; got != nil {
		t.Errorf("another key's calls counted for the admin key: %v", got)
	}
	e.SetCAMPolicy("AKIDscoped", nil)
	must(t, describeQuota(scoped))
}

func TestParseCAMPolicyRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"version":           `{"version":"1.0","statement":[{"effect":"allow","action":"*","resource":"*"}]}`,
		"no statement":      `{"version":"2.0","statement":[]}`,
		"effect":            `{"version":"2.0","statement":[{"effect":"permit","action":"*","resource":"*"}]}`,
		"no resource":       `{"version":"2.0","statement":[{"effect":"allow","action":"*"}]}`,
		"bare action":       `{"version":"2.0","statement":[{"effect":"allow","action":"CreateListener","resource":"*"}]}`,
		"short resource":    `{"version":"2.0","statement":[{"effect":"allow","action":"*","resource":"qcs::clb:lb-1"}]}`,
		"condition":         `{"version":"2.0","statement":[{"effect":"allow","action":"*","resource":"*","condition":{"ip_equal":{"qcs:ip":"10.0.0.1"}}}]}`,
		"action not string": `{"version":"2.0","statement":[{"effect":"allow","action":7,"resource":"*"}]}`,
	} {
		if _, err := emulator.ParseCAMPolicy([]byte(doc)); err == nil {
			t.Errorf("%s: accepted %s", name, doc)
		}
	}
}
