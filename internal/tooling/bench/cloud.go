package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	tcerr "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// EmulatorProfile names the emulator configuration of every run.
const EmulatorProfile = "realistic (50 ms per call, 1 s tasks, 20 requests/s per action, 50 listeners per load balancer)"

// maxCreateNumber is how many load balancers one CreateLoadBalancer makes.
const maxCreateNumber = 20

// NewCloud starts a fresh emulator with the realistic profile and lbs
// load balancers created through the real SDK before any system runs;
// its call counters start at zero.
func NewCloud(ctx context.Context, lbs, startPort, endPort int) (*emulator.Emulator, Cloud, error) {
	cfg := emulator.RealisticConfig()
	// Room for the memory run's load balancers; the pool's own stay at
	// the real quotas (50 listeners each).
	cfg.OpenLBQuota = max(lbs, 100)
	emu, endpoint, err := emulator.Start(cfg)
	if err != nil {
		return nil, Cloud{}, err
	}
	c := Cloud{Endpoint: endpoint, SecretID: emulator.DefaultSecretID, SecretKey: emulator.DefaultSecretKey,
		Region: emulator.DefaultRegion, StartPort: startPort, EndPort: endPort}
	cpf := profile.NewClientProfile()
	cpf.HttpProfile.Endpoint, cpf.HttpProfile.Scheme, cpf.HttpProfile.ReqTimeout = endpoint, "http", 30
	sdk, err := clb.NewClient(common.NewCredential(c.SecretID, c.SecretKey), c.Region, cpf)
	if err != nil {
		_ = emu.Close()
		return nil, Cloud{}, err
	}
	for len(c.LoadBalancerIDs) < lbs {
		req := clb.NewCreateLoadBalancerRequest()
		req.LoadBalancerType = common.StringPtr("OPEN")
		req.Number = common.Uint64Ptr(uint64(min(maxCreateNumber, lbs-len(c.LoadBalancerIDs))))
		var resp *clb.CreateLoadBalancerResponse
		// The emulator limits 20 calls per second, as the cloud does.
		err := testenv.Eventually(ctx, time.Minute, func() error {
			var err error
			resp, err = sdk.CreateLoadBalancerWithContext(ctx, req)
			if e := (*tcerr.TencentCloudSDKError)(nil); errors.As(err, &e) && !strings.HasPrefix(e.Code, "RequestLimitExceeded") {
				return fmt.Errorf("%w (not retried)", err)
			}
			return err
		})
		if err != nil {
			_ = emu.Close()
			return nil, Cloud{}, fmt.Errorf("cannot create the load balancers: %w", err)
		}
		for _, id := range resp.Response.LoadBalancerIds {
			c.LoadBalancerIDs = append(c.LoadBalancerIDs, *id)
		}
	}
	// Wait for the creation tasks, so that the systems find them ready.
	if err := testenv.Eventually(ctx, 2*time.Minute, func() error {
		for _, lb := range emu.Inventory().LoadBalancers {
			if lb.Status != 1 {
				return fmt.Errorf("load balancer %s still creating", lb.ID)
			}
		}
		return nil
	}); err != nil {
		_ = emu.Close()
		return nil, Cloud{}, err
	}
	emu.ResetCounters()
	return emu, c, nil
}

// targets counts the targets the cloud holds.
func targets(emu *emulator.Emulator) int {
	n := 0
	for _, lb := range emu.Inventory().LoadBalancers {
		for _, l := range lb.Listeners {
			n += len(l.Targets)
		}
	}
	return n
}

// isWrite tells the calls that change the cloud from those that read it.
func isWrite(action string) bool {
	for _, p := range []string{"Describe", "Inquiry", "Get", "List", "Check"} {
		if strings.HasPrefix(action, p) {
			return false
		}
	}
	return true
}

// callErrors counts the calls the emulator refused, by "Action Code"
// (throttled ones among them).
func callErrors(emu *emulator.Emulator) map[string]int {
	out := map[string]int{}
	for a, byCode := range emu.Calls() {
		for code, n := range byCode {
			if code != "OK" {
				out[a+" "+code] += n
			}
		}
	}
	return out
}

// callTotals sums the emulator's counters per action, whatever the result.
func callTotals(emu *emulator.Emulator) map[string]int {
	out := map[string]int{}
	for a, byCode := range emu.Calls() {
		for _, n := range byCode {
			out[a] += n
		}
	}
	return out
}
