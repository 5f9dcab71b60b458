package emulator_test

import (
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

func TestRateLimitPerActionAndKey(t *testing.T) {
	cfg := emulator.DefaultConfig() // 20 requests per second per action and key
	cfg.TaskDuration = 0
	cfg.Credentials = []emulator.Credential{
		{SecretID: emulator.DefaultSecretID, SecretKey: emulator.DefaultSecretKey},
		{SecretID: "AKIDother", SecretKey: "AKIDother-key"},
	}
	e, endpoint, c := env(t, cfg)
	limited := 0
	for range 30 {
		if err := describeQuota(c); err != nil {
			wantCode(t, err, clb.REQUESTLIMITEXCEEDED)
			limited++
		}
	}
	if limited < 5 || limited > 15 {
		t.Fatalf("%d of 30 back-to-back calls were throttled, want about 10", limited)
	}
	// Another action and another key have their own budgets.
	_, err := c.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest())
	must(t, err)
	must(t, describeQuota(newClient(t, endpoint, "AKIDother", emulator.DefaultRegion)))
	if got := e.Calls()["DescribeQuota"]["RequestLimitExceeded"]; got != limited {
		t.Fatalf("counters saw %d throttled calls, the client %d", got, limited)
	}

	e.SetRateLimit(0, nil)
	for range 50 {
		must(t, describeQuota(c))
	}
}

func TestRateLimitRecoveredBySDKRetry(t *testing.T) {
	cfg := instant()
	cfg.RateLimit = 20
	e, endpoint, _ := env(t, cfg)
	cpf := emulatortest.ClientProfile(endpoint)
	cpf.RateLimitExceededMaxRetries = 10
	cpf.RateLimitExceededRetryDuration = profile.ConstantDurationFunc(20 * time.Millisecond)
	c := emulatortest.NewSDKClientWithProfile(t, common.NewCredential(emulator.DefaultSecretID, emulator.DefaultSecretKey), emulator.DefaultRegion, cpf)
	for range 26 {
		must(t, describeQuota(c)) // the SDK hides every RequestLimitExceeded
	}
	calls := e.Calls()["DescribeQuota"]
	if calls["OK"] != 26 || calls["RequestLimitExceeded"] == 0 {
		t.Fatalf("calls %v: want 26 successes after some throttled attempts", calls)
	}
}
