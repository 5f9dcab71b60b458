package emulator_test

import (
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
	e.SetPolicy("AKIDreader", []string{"clb:Describe*", "qcs/clb:DescribeTaskStatus"})

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
